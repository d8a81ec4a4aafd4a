#!/usr/bin/env bash
# The suite behind `make test` after vet: the unit and envtest tests while the lab comes
# up beside them (starting it is mostly waiting on its nodes), then the end-to-end tests
# on it, then the lab goes down whatever happened. Exits non-zero when any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
E2E_FLAGS=${E2E_FLAGS:--count=1 -timeout 30m -parallel 3}

log=$(mktemp /tmp/nap-cluster-up.XXXXXX)
bash hack/cluster.sh up >"$log" 2>&1 &
up=$!

# Three packages at a time: envtest's API servers and the sleeper's processes leave a
# third of two cores idle at two.
# shellcheck disable=SC2046 # one argument per package
# -timeout: cold, internal/release cross-builds the kubectl plugin for four platforms
# (about 9 minutes alone), over go test's default 10.
$GO test -count=1 -p 3 -timeout 30m $($GO list ./... | grep -v /test/e2e)
units=$?

wait "$up"
upped=$?
cat "$log"
rm -f "$log"
if [ "$upped" -ne 0 ]; then
	echo "test: hack/cluster.sh up failed ($upped)" >&2
	bash hack/cluster.sh down
	exit 1
fi
if [ "$units" -ne 0 ]; then
	bash hack/cluster.sh down
	exit "$units"
fi

# shellcheck disable=SC2086 # E2E_FLAGS are several flags
$GO test $E2E_FLAGS ./test/e2e
rc=$?
[ "$rc" -eq 0 ] || bash hack/cluster.sh failures
bash hack/cluster.sh down
exit "$rc"
