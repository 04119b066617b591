#!/usr/bin/env bash
# Headless Chromium for the web console's browser test (Debian package), with a font
# so that screenshots show text.
set -euo pipefail
if ! command -v chromium-headless-shell >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        chromium-headless-shell fonts-dejavu-core
fi
(command -v chromium-headless-shell || command -v chromium) >/dev/null
echo "headless chromium ready"
