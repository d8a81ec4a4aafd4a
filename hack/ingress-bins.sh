#!/usr/bin/env bash
# Builds the lab's ingress controller, Traefik (hack/ingress-version), from the Go module
# proxy into a cache outside the repository keyed by version. Reused when present: only
# the first run pays (~9 min on 2 cores; the binary is 178 MB).
#
# v3.6.12, not the newest listed (v3.7.13): 15 modules that v3.7.x needs are refused by
# the module proxy (403), among them the go-http-auth fork its basic-auth middleware uses
# and 14 DNS-provider SDKs of lego v5. Every module of v3.6.12 is served.
#
# Traefik cannot be `go install`ed: its go.mod has replace directives (two forks, and
# github.com/traefik/traefik/dynamic/ext => a nested folder the module zip leaves out).
# A scratch module repeats the forks' replaces and supplies dynamic/ext, which in the
# open-source build is an empty extension point: two struct types with no fields that
# dynamic.HTTP and dynamic.Router embed inline.
#
# Prints the cache folder on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=${TRAEFIK_VERSION:-$(cat "$here/ingress-version")}
cache=${NAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nap}
out="$cache/traefik/$version"

if [ ! -x "$out/bin/traefik" ]; then
  echo "ingress-bins: building Traefik $version into $out/bin (first run only: ~9 min)" >&2
  work="$cache/traefik/build-$version"
  rm -rf "$work" && mkdir -p "$work/ext" "$out/bin"
  gomod=$(go mod download -json "github.com/traefik/traefik/v3@$version" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  [ -n "$gomod" ] || { echo "ingress-bins: cannot download Traefik $version" >&2; exit 1; }
  # The module's own replace directives that point at other modules (not at ./ folders),
  # and its excludes, carried over as they are.
  forks=$(sed -n '/^replace (/,/^)/p' "$gomod" | grep '=>' | grep -v '=> \./' || true)
  excludes=$(grep '^exclude ' "$gomod" || true)
  goline=$(grep -m1 '^go ' "$gomod")
  cat >"$work/ext/go.mod" <<MOD
module github.com/traefik/traefik/dynamic/ext

$goline
MOD
  cat >"$work/ext/ext.go" <<'GO'
// Package ext is the extension point that Traefik's configuration types embed; the
// open-source build leaves it empty.
package ext

// HTTP is embedded in dynamic.HTTP.
type HTTP struct{}

// Router is embedded in dynamic.Router.
type Router struct{}
GO
  {
    echo "module traefikbuild"
    echo "$goline"
    echo "require github.com/traefik/traefik/v3 $version"
    echo "replace github.com/traefik/traefik/dynamic/ext => ./ext"
    echo "replace ("
    echo "$forks"
    echo ")"
    echo "$excludes"
  } >"$work/go.mod"
  (cd "$work" && GOFLAGS=-mod=mod go get "github.com/traefik/traefik/v3/cmd/traefik@$version" >&2)
  grep -q "github.com/traefik/traefik/v3 $version\$" "$work/go.mod" || { echo "ingress-bins: go get moved Traefik off $version" >&2; exit 1; }
  (cd "$work" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$version" \
    -o "$out/bin/traefik" github.com/traefik/traefik/v3/cmd/traefik >&2)
  rm -rf "$work"
fi
"$out/bin/traefik" version >&2
echo "$out"
