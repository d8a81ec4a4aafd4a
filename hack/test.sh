#!/usr/bin/env bash
# The suite behind `make test` after vet, in two stages, so that the lab's waiting and
# the units' computing overlap; hack/e2e-lanes names the end-to-end tests' lanes:
#  1. the unit and envtest tests but three packages' (below); beside them the lab comes
#     up and, once it is up, runs the early lane's tests (none sends the traffic whose
#     losses a test counts);
#  2. the side lanes' tests, side-a and side-b in two processes at once (none installs
#     the controller nor disrupts a node); then every other end-to-end test but the
#     full lane's (make e2e's alone), alone on the lab, with the three packages' unit
#     tests and then the bounded fuzzing (make fuzz) beside it at the lowest priority;
#     then the lab goes down whatever happened.
# Exits non-zero when any part failed; a failure in stage 1's unit tests skips stage 2.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
MAKE=${MAKE:-make}
E2E_FLAGS=${E2E_FLAGS:--count=1 -timeout 50m -parallel 3}

# One suite on the lab at a time: the lab is the machine's (hack/cluster.sh up reuses a
# running one), so a second run beside the first would see, and undo, its controller and
# namespaces. A second run waits for the first (at most 40 min) rather than share it.
exec 9>/tmp/nap-lab.lock
if ! flock -n 9; then
	echo "test: another run holds the lab (/tmp/nap-lab.lock): waiting for it" >&2
	flock -w 2400 9 || { echo "test: the lab is still held after 40 min" >&2; exit 1; }
fi

# When each part ended, in seconds from this script's start, for the log's breakdown.
at() { echo "test: $1 at ${SECONDS} s" >&2; }

# A lane's tests as one pattern for -run and -skip (anchored by the caller), as
# TestLanes reads hack/e2e-lanes: a lane and a test per line, comments and blank lines
# aside.
lane() { awk -v l="$1" '$1 == l && NF == 2 { print $2 }' hack/e2e-lanes | paste -sd '|'; }
early="^($(lane early))\$"
side_a="^($(lane side-a))\$"
side_b="^($(lane side-b))\$"
apart="^($(lane early)|$(lane side-a)|$(lane side-b)|$(lane full))\$"

# The log keeps each test's end, the failed tests' output and the tests by time
# (hack/e2etimes); each lane's whole stream stays in /tmp/nap-e2e-early.json,
# /tmp/nap-e2e-side-a.json, /tmp/nap-e2e-side-b.json and /tmp/nap-e2e.json until the
# next run.
$GO build -o /tmp/nap-e2etimes ./hack/e2etimes || exit 1
# And, at the end, the confusion table of nap's verdicts over every measurement the
# lanes logged (hack/verdicts).
$GO build -o /tmp/nap-verdicts ./hack/verdicts || exit 1

uplog=$(mktemp /tmp/nap-cluster-up.XXXXXX)
earlylog=$(mktemp /tmp/nap-e2e-early.XXXXXX)
fuzzlog=$(mktemp /tmp/nap-fuzz.XXXXXX)
laterlog=$(mktemp /tmp/nap-units-later.XXXXXX)
state=$(mktemp -d /tmp/nap-test-state.XXXXXX) # upfailed, early
(
	if ! bash hack/cluster.sh up >"$uplog" 2>&1; then
		echo failed >"$state/upfailed"
		exit 1
	fi
	at "the lab up"
	# shellcheck disable=SC2086 # E2E_FLAGS are several flags
	$GO test -json $E2E_FLAGS -run "$early" ./test/e2e >/tmp/nap-e2e-early.json
	echo $? >"$state/early"
	at "the early lane's end"
	/tmp/nap-e2etimes </tmp/nap-e2e-early.json >"$earlylog" 2>&1 || echo 1 >"$state/early"
) &
lab=$!

# Three packages at a time, the longest (the sleeper) first, so that it does not start
# last and hold the stage alone. Not beside the side lanes: the sleeper's tests time its waits against
# real sockets, and a run that started the side lanes beside them, the units niced, had
# those waits end 7 s late (2026-12-07). Not here: the packages whose tests start
# envtest's API servers (their etcd in memory) and time nothing against the lab,
# controller, controller/install and internal/cli/app (138, 50 and 55 s of the stage's
# 215, 2026-12-08). They held the first stage 40 s past the early lane's end; they run
# beside the second stage, whose tests mostly wait on terminations (31% of the two
# cores busy, 2026-12-08), at the lowest priority, before the fuzzing.
# -timeout: cold, internal/release cross-builds the kubectl plugin for four platforms
# (about 9 minutes alone), over go test's default 10.
later=$($GO list ./controller ./controller/install ./internal/cli/app)
first=$($GO list ./sleeper)
# shellcheck disable=SC2046 # one argument per package
$GO test -count=1 -p 3 -timeout 30m $first $($GO list ./... | grep -v /test/e2e | grep -vxF "$later" | grep -vxF "$first")
units=$?
at "the units' end"

wait "$lab"
early_rc=$(cat "$state/early" 2>/dev/null || echo 1)
cat "$uplog"
if [ -s "$state/upfailed" ]; then
	rm -rf "$uplog" "$earlylog" "$laterlog" "$fuzzlog" "$state"
	echo "test: hack/cluster.sh up failed" >&2
	bash hack/cluster.sh down
	exit 1
fi
echo "test: the early end-to-end tests ($early), beside the units:"
cat "$earlylog"
if [ "$units" -ne 0 ]; then
	rm -rf "$uplog" "$earlylog" "$laterlog" "$fuzzlog" "$state"
	bash hack/cluster.sh down
	exit "$units"
fi

# The side lanes at once, each its own go test; their logs after both ended.
# shellcheck disable=SC2086 # E2E_FLAGS are several flags
$GO test -json $E2E_FLAGS -run "$side_a" ./test/e2e >/tmp/nap-e2e-side-a.json &
side=$!
# shellcheck disable=SC2086
$GO test -json $E2E_FLAGS -run "$side_b" ./test/e2e >/tmp/nap-e2e-side-b.json
sides=$?
wait "$side" || sides=1
at "the side lanes' end"
for l in a b; do
	echo "test: side lane $l, beside side lane $([ $l = a ] && echo b || echo a):"
	/tmp/nap-e2etimes </tmp/nap-e2e-side-$l.json || sides=1
done

# Beside the rest, at the lowest priority (that part's tests mostly wait on
# terminations, and the lab's processes come first): the units held back from the first
# stage, then the bounded fuzzing (make fuzz).
(
	# shellcheck disable=SC2086 # one argument per package
	nice -n 19 $GO test -count=1 -p 3 -timeout 30m $later >"$laterlog" 2>&1
	echo $? >"$state/later"
	at "the held-back units' end"
	nice -n 19 "$MAKE" --no-print-directory fuzz GO="$GO" >"$fuzzlog" 2>&1
) &
fuzzing=$!

# shellcheck disable=SC2086
$GO test -json $E2E_FLAGS -skip "$apart" ./test/e2e | tee /tmp/nap-e2e.json | /tmp/nap-e2etimes
rc=$?
at "the second stage's end"
echo "test: nap's verdicts over this run's measurements, against what each pod lost (hack/verdicts):"
/tmp/nap-verdicts /tmp/nap-e2e-early.json /tmp/nap-e2e-side-a.json /tmp/nap-e2e-side-b.json /tmp/nap-e2e.json || rc=1
wait "$fuzzing"
fuzz=$?
at "the fuzzing's end"
later_rc=$(cat "$state/later" 2>/dev/null || echo 1)
echo "test: the units beside the second stage's rest:"
cat "$laterlog"
echo "test: the fuzzing, after them:"
cat "$fuzzlog"
rm -rf "$uplog" "$earlylog" "$laterlog" "$fuzzlog" "$state"
[ "$sides" -eq 0 ] || rc=1
[ "$early_rc" -eq 0 ] && [ "$rc" -eq 0 ] || bash hack/cluster.sh failures
bash hack/cluster.sh down
[ "$early_rc" -eq 0 ] || { echo "test: the early end-to-end tests failed" >&2; exit "$early_rc"; }
[ "$later_rc" -eq 0 ] || { echo "test: the units beside the second stage failed" >&2; exit "$later_rc"; }
[ "$fuzz" -eq 0 ] || { echo "test: the fuzzing failed" >&2; exit "$fuzz"; }
exit "$rc"
