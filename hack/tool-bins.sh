#!/usr/bin/env bash
# Builds the tools the tests run as users run them (hack/tool-versions: helm, promtool)
# from the Go module proxy into a cache outside the repository keyed by version. Reused
# when present: only the first run pays (helm ~5 min, promtool ~6 min on 2 cores).
#
# Prints the cache's bin folder on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${NAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nap}

grep -v '^#' "$here/tool-versions" | while read -r name pkg version; do
	[ -n "$name" ] || continue
	out="$cache/tools/$name-$version"
	if [ ! -x "$out/$name" ]; then
		echo "tool-bins: building $name $version into $out (first run only)" >&2
		mkdir -p "$out.tmp"
		GOBIN="$out.tmp" CGO_ENABLED=0 go install -trimpath -ldflags '-s -w' "$pkg@$version"
		rm -rf "$out" && mv "$out.tmp" "$out"
	fi
done
echo "$cache/tools"
