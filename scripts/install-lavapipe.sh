#!/usr/bin/env bash
# Mesa's software Vulkan driver (lavapipe), so that the WebGPU tests have an adapter on a machine
# without a GPU. Debian 12's own Mesa (22.3) is refused by Dawn, so it comes from bookworm-backports
# (Mesa 25). Idempotent and quick when the driver is already there: it only touches apt when the
# installed mesa-vulkan-drivers is missing or older than 25.
set -euo pipefail

installed="$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)"
if [ -n "$installed" ] && dpkg --compare-versions "$installed" ge 25; then
  exit 0
fi

list=/etc/apt/sources.list.d/bookworm-backports.list
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo 'deb http://deb.debian.org/debian bookworm-backports main' > "$list"
fi
apt-get update -o Acquire::Retries=3
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -t bookworm-backports mesa-vulkan-drivers
