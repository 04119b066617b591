#!/usr/bin/env bash
# nats-server for the bus tests (Debian package; JetStream included).
set -euo pipefail
if ! command -v nats-server >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq nats-server
    else
        sudo apt-get update -qq && sudo apt-get install -y -qq nats-server
    fi
fi
nats-server --version
