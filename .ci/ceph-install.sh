#!/usr/bin/env bash
# Installs the Ceph daemons the immutability tests start (tests/integration/ceph.py):
# a monitor, an OSD and the S3 gateway. Idempotent: does nothing when they are installed.
set -euo pipefail

packages=(ceph-mon ceph-osd radosgw)
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "ceph-install: ${packages[*]} already installed"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
