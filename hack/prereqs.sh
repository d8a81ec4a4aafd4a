#!/usr/bin/env bash
# Installs what nap's tests need on a fresh Debian machine, and nothing that is already
# there. Idempotent; needs root (or sudo) only when something is missing.
#
#   qemu-user-static  runs the arm64 sleeper (qemu-aarch64-static ./nap 1)
#   util-linux        unshare, for the PID-namespace test
#   coreutils         chroot, for the empty-root test
set -euo pipefail

need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v unshare >/dev/null || need+=(util-linux)
command -v chroot >/dev/null || need+=(coreutils)

if [ ${#need[@]} -eq 0 ]; then
  echo "prereqs: all present"
  exit 0
fi

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "prereqs: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
