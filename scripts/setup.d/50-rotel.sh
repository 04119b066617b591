#!/usr/bin/env bash
# rotel, a small OTLP collector (gRPC and HTTP) that prints the spans it receives: the
# trace tests export to it in place of Jaeger.
set -euo pipefail
if ! python3 -c "import rotel" >/dev/null 2>&1; then
    python3 -m pip install --quiet rotel
fi
binary="$(python3 -c "import rotel, os; print(os.path.join(os.path.dirname(rotel.__file__), 'rotel-agent'))")"
if [ ! -x "$binary" ]; then
    echo "rotel is installed but $binary is missing or not executable" >&2
    exit 1
fi
echo "rotel-agent at $binary"
