#!/usr/bin/env bash
# nats-py for the Python example agent (examples/python-retriever) and its test.
set -euo pipefail
if ! python3 -c "import nats.micro" >/dev/null 2>&1; then
    python3 -m pip install --quiet nats-py==2.9.0
fi
python3 -c "import nats.micro; print('nats-py ready')"
