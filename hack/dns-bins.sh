#!/usr/bin/env bash
# Builds the lab's cluster DNS, CoreDNS (hack/dns-version: the version kubeadm 1.37
# deploys), from the Go module proxy into a cache outside the repository keyed by
# version. Reused when present: only the first run pays (72 s on 2 cores with the
# modules it shares with nap cached; the binary is 52 MB).
#
# A scratch module with CoreDNS's own way to choose plugins at compile time (a main that
# sets dnsserver.Directives and imports the plugins, as its README shows): the plugins
# of the Corefile kubeadm writes, in CoreDNS's plugin.cfg order, but forward. The lab's
# DNS answers for the cluster and nothing else: a name outside it gets SERVFAIL, never sent
# on (no address of the lab may leave the machine).
#
# Prints the cache folder on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=${COREDNS_VERSION:-$(cat "$here/dns-version")}
cache=${NAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nap}
out="$cache/coredns/$version"

if [ ! -x "$out/bin/coredns" ]; then
  echo "dns-bins: building CoreDNS $version into $out/bin (first run only)" >&2
  work="$cache/coredns/build-$version"
  rm -rf "$work" && mkdir -p "$work" "$out/bin"
  gomod=$(go mod download -json "github.com/coredns/coredns@$version" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  [ -n "$gomod" ] || { echo "dns-bins: cannot download CoreDNS $version" >&2; exit 1; }
  goline=$(grep -m1 '^go ' "$gomod")
  printf 'module corednsbuild\n\n%s\n\nrequire github.com/coredns/coredns %s\n' "$goline" "$version" >"$work/go.mod"
  cat >"$work/main.go" <<'GO'
// Command coredns is CoreDNS with the plugins of kubeadm's Corefile but forward.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// The order of CoreDNS's plugin.cfg: it is the order in which a query meets them.
func init() {
	dnsserver.Directives = []string{"reload", "ready", "health", "prometheus", "errors", "log", "loadbalance", "cache", "kubernetes", "loop"}
}

func main() { coremain.Run() }
GO
  (cd "$work" && GOFLAGS=-mod=mod go mod tidy >&2)
  grep -q "github.com/coredns/coredns $version\$" "$work/go.mod" || { echo "dns-bins: go mod tidy moved CoreDNS off $version" >&2; exit 1; }
  (cd "$work" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/bin/coredns" . >&2)
  rm -rf "$work"
fi
"$out/bin/coredns" -version >&2
echo "$out"
