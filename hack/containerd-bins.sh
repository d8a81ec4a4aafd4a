#!/usr/bin/env bash
# Builds node 2's container runtime: containerd (hack/containerd-version-node2), its runc
# shim and ctr, from the Go module proxy into a cache outside the repository keyed by
# version. Node 1 runs Debian's containerd 1.6; node 2 a containerd 2.x, which mounts
# image volumes (KEP-4639; containerd 2.1+): mixed runtimes are real, and nap's image
# delivery needs one. Reused when present: only the first run pays (~2 min on 2 cores).
#
# Static (CGO_ENABLED=0), without the btrfs, devmapper and zfs snapshotters the lab does
# not use (overlayfs). runc is Debian's.
#
# Prints the cache folder on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=${CONTAINERD_VERSION:-$(cat "$here/containerd-version-node2")}
cache=${NAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nap}
out="$cache/containerd/$version"
bins=(containerd containerd-shim-runc-v2 ctr)

ok=1
for b in "${bins[@]}"; do [ -x "$out/bin/$b" ] || ok=0; done
if [ $ok -eq 0 ]; then
  echo "containerd-bins: building containerd $version into $out/bin (first run only: ~2 min)" >&2
  work="$cache/containerd/build-$version"
  rm -rf "$work" && mkdir -p "$work" "$out/bin"
  printf 'module ctrdbuild\n\ngo 1.24.0\n' >"$work/go.mod"
  pkgs=()
  gets=()
  for b in "${bins[@]}"; do
    pkgs+=("github.com/containerd/containerd/v2/cmd/$b")
    gets+=("github.com/containerd/containerd/v2/cmd/$b@$version")
  done
  (cd "$work" && GOFLAGS=-mod=mod go get "${gets[@]}" >&2)
  (cd "$work" && CGO_ENABLED=0 go build -tags "no_btrfs no_devmapper no_zfs" -trimpath \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$version" -o "$out/bin/" "${pkgs[@]}" >&2)
  rm -rf "$work"
fi
"$out/bin/containerd" --version >&2
echo "$out"
