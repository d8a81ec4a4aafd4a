#!/usr/bin/env bash
# Builds the Kubernetes binaries nap's tests run (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kube-proxy, kubectl) from the Go module proxy, into a cache
# outside the repository keyed by version, and assembles the envtest assets folder
# (Debian's etcd + our kube-apiserver + kubectl). Reused when present: only the first
# run pays (~13 min on 2 cores for all six).
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces the staging modules
# with ./staging/... paths. A scratch module that replaces each of them with the
# published k8s.io/<m> v0.X.Y builds it.
#
# KUBE_VERSION and KUBE_BINS (a space-separated subset) override what is built: the lab's
# second node runs an older kubelet and kube-proxy (hack/kube-version-node2).
#
# Prints the cache folder on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=${KUBE_VERSION:-$(cat "$here/kube-version")}
cache=${NAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nap}
out="$cache/kube/$version"
read -r -a bins <<<"${KUBE_BINS:-kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl}"

bash "$here/prereqs.sh" >&2

ok=1
for b in "${bins[@]}"; do [ -x "$out/bin/$b" ] || ok=0; done
if [ $ok -eq 0 ]; then
  echo "kube-bins: building Kubernetes $version into $out/bin (first run only: ~13 min for all six)" >&2
  work="$cache/kube/build-$version"
  rm -rf "$work" && mkdir -p "$work" "$out/bin"
  gomod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  staging=$(sed -n '/^replace (/,/^)/p' "$gomod" | sed -n 's,^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*,\1,p')
  [ -n "$staging" ] || { echo "kube-bins: no staging replaces found in $gomod" >&2; exit 1; }
  minor=${version#v1.}
  {
    echo "module k8sbuild"
    echo "go 1.24.0"
    echo "godebug default=go1.24"
    echo "require k8s.io/kubernetes $version"
    for m in $staging; do echo "replace $m => $m v0.$minor"; done
  } > "$work/go.mod"
  cmds=()
  for b in "${bins[@]}"; do cmds+=("k8s.io/kubernetes/cmd/$b"); done
  # Each cmd at $version: a bare `go get <pkg>` would upgrade k8s.io/kubernetes to latest.
  gets=()
  for c in "${cmds[@]}"; do gets+=("$c@$version"); done
  (cd "$work" && GOFLAGS=-mod=mod go get "${gets[@]}" >&2)
  grep -q "k8s.io/kubernetes $version\$" "$work/go.mod" || { echo "kube-bins: go get moved k8s.io/kubernetes off $version" >&2; exit 1; }
  ld="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1"
  ld="$ld -X k8s.io/component-base/version.gitMinor=${minor%%.*} -X k8s.io/component-base/version.gitTreeState=clean"
  ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$version"
  (cd "$work" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$out/bin/" "${cmds[@]}" >&2)
  rm -rf "$work"
fi

# envtest assets: what controller-runtime's envtest looks for in KUBEBUILDER_ASSETS.
if [ -x "$out/bin/kube-apiserver" ] && [ -x "$out/bin/kubectl" ]; then
  mkdir -p "$out/envtest"
  ln -sf "$out/bin/kube-apiserver" "$out/envtest/kube-apiserver"
  ln -sf "$out/bin/kubectl" "$out/envtest/kubectl"
  ln -sf "$(command -v etcd)" "$out/envtest/etcd"
fi
"$out/bin/${bins[0]}" --version >&2
echo "$out"
