#!/usr/bin/env bash
# The suite behind `make test` after vet: the unit and envtest tests while the lab comes
# up beside them (starting it is mostly waiting on its nodes), then the end-to-end tests
# on it, then the lab goes down whatever happened. Exits non-zero when any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
E2E_FLAGS=${E2E_FLAGS:--count=1 -timeout 50m -parallel 3}

# One suite on the lab at a time: the lab is the machine's (hack/cluster.sh up reuses a
# running one), so a second run beside the first would see, and undo, its controller and
# namespaces. A second run waits for the first (at most 40 min) rather than share it.
exec 9>/tmp/nap-lab.lock
if ! flock -n 9; then
	echo "test: another run holds the lab (/tmp/nap-lab.lock): waiting for it" >&2
	flock -w 2400 9 || { echo "test: the lab is still held after 40 min" >&2; exit 1; }
fi

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

# The log keeps each test's end, the failed tests' output and the tests by time
# (hack/e2etimes); the whole stream stays in /tmp/nap-e2e.json until the next run.
$GO build -o /tmp/nap-e2etimes ./hack/e2etimes || { bash hack/cluster.sh down; exit 1; }
# shellcheck disable=SC2086 # E2E_FLAGS are several flags
$GO test -json $E2E_FLAGS ./test/e2e | tee /tmp/nap-e2e.json | /tmp/nap-e2etimes
rc=$?
[ "$rc" -eq 0 ] || bash hack/cluster.sh failures
bash hack/cluster.sh down
exit "$rc"
