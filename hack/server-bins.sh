#!/usr/bin/env bash
# Fetches the third-party servers the end-to-end proof runs unmodified beside nap's demo
# app into a cache outside the repository keyed by version. Reused when present.
#
#   nginx  Debian's package (bookworm: 1.22.1), its binary as Debian builds it; the
#          shared libraries it links are the machine's (libc, libcrypt, libpcre2-8,
#          libssl, libcrypto, libz), which hack/images copies beside it into a FROM
#          scratch image (no shell). Debian's pool keeps only a package's newest build,
#          so the version is what apt offers today, printed and in the cache's name.
#
# Prints the nginx binary's path on the last line of stdout.
set -euo pipefail

cache=${NAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nap}
candidate() { apt-cache policy nginx 2>/dev/null | awk '/Candidate:/ {print $2}'; }
update() { if [ "$(id -u)" -eq 0 ]; then apt-get update -qq; else sudo apt-get update -qq; fi; }
version=$(candidate)
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  # A fresh machine's package lists may be empty; a cached build still serves.
  cached=$(ls -d "$cache"/servers/nginx-*/ 2>/dev/null | tail -1 || true)
  if [ -n "$cached" ] && [ -x "$cached/nginx" ]; then
    echo "${cached%/}/nginx"
    exit 0
  fi
  update
  version=$(candidate)
fi
[ -n "$version" ] && [ "$version" != "(none)" ] || { echo "server-bins: apt offers no nginx" >&2; exit 1; }
out="$cache/servers/nginx-$version"
if [ ! -x "$out/nginx" ]; then
  echo "server-bins: fetching Debian's nginx $version into $out (first run only)" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  if ! (cd "$work" && apt-get download -q -o APT::Sandbox::User=root "nginx=$version" >&2); then
    # Stale package lists name a build the pool no longer has: refresh them, once.
    update
    version=$(candidate)
    out="$cache/servers/nginx-$version"
    (cd "$work" && apt-get download -q -o APT::Sandbox::User=root "nginx=$version" >&2)
  fi
  dpkg-deb -x "$work"/nginx_*.deb "$work/root"
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  cp "$work/root/usr/sbin/nginx" "$out.tmp/nginx"
  rm -rf "$out" && mv "$out.tmp" "$out"
fi
# The libraries it links, which hack/images copies from this machine (Debian's nginx
# depends on these packages besides libc).
if ldd "$out/nginx" | grep -q "not found"; then
  echo "server-bins: installing the libraries nginx links" >&2
  export DEBIAN_FRONTEND=noninteractive
  if [ "$(id -u)" -eq 0 ]; then apt-get install -y -qq libcrypt1 libpcre2-8-0 libssl3 zlib1g >&2
  else sudo apt-get install -y -qq libcrypt1 libpcre2-8-0 libssl3 zlib1g >&2; fi
fi
"$out/nginx" -v >&2
echo "$out/nginx"
