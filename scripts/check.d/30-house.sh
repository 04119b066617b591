#!/usr/bin/env bash
# The shape of the code (scripts/house-check): no file over 800 lines in the
# coordinator or the agents' runtime, no function over 150 lines in the coordinator,
# no import loop between the top-level modules of agents/ or coordinator/.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/house-check
