#!/usr/bin/env bash
# The document zoo (tests/data/docs-zoo) holds together: every question parses, every
# evidence quote is written verbatim in its file, every answer stands in its quotes and
# documents, every mixed-set triple is in its graph.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/docs-zoo-check
