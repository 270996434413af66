#!/usr/bin/env bash
# Installs the headless browser the status page test renders with
# (tests/integration/test_status_page.py). Idempotent: does nothing when it is installed.
set -euo pipefail

if command -v chromium >/dev/null; then
  echo "chromium-install: $(chromium --version 2>/dev/null || echo chromium) already installed"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
