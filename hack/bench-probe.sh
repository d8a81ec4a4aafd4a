#!/usr/bin/env bash
# napctl probe's benchmark: 2,000 req/s for 10 s against a local server on loopback,
# over new connections and keep-alive, with the achieved rate, the send lag and the CPU
# time per request; then vegeta (built from the Go module proxy into a cache, never
# committed) at the same rate, for the CPU time side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-2000}
DUR=${DUR:-10}
cache=${NAP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nap}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/napctl" ./cmd/napctl
go build -o "$work/app" ./test/app
[ -x "$cache/vegeta/v12.13.0/vegeta" ] || GOBIN="$cache/vegeta/v12.13.0" go install github.com/tsenart/vegeta/v12@v12.13.0
vegeta="$cache/vegeta/v12.13.0/vegeta"

"$work/app" -addr 127.0.0.1:18080 2>/dev/null &
for _ in $(seq 50); do curl -sf http://127.0.0.1:18080/ >/dev/null && break; sleep 0.1; done

cpu() { # out command...: runs command with stdout to out, prints its user+sys seconds
  local t0 t1 out=$1 me=$BASHPID # this subshell: its children's CPU lands in its cutime
  shift
  t0=$(awk '{print $14+$15+$16+$17}' "/proc/$me/stat")
  "$@" >"$out"
  t1=$(awk '{print $14+$15+$16+$17}' "/proc/$me/stat")
  awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", (b-a)/hz}'
}

for conn in new reuse; do
  c=$(cpu "$work/probe-$conn.json" "$work/napctl" probe http://127.0.0.1:18080/ --rate "$RATE" --duration "${DUR}s" --conn "$conn" -o json)
  python3 - "$work/probe-$conn.json" "$RATE" "$DUR" "$c" "$conn" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); rate, dur, cpu, conn = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
n = s["total"]["requests"]; el = s["duration_seconds"]  # from the first send to the last answer
print(f"napctl probe --conn {conn:5}: {n} requests in {el:.3f}s, achieved {n/el:.1f}/s ({(n/el-rate)/rate*100:+.2f}% of {rate:.0f}), "
      f"failed {s['total']['failed']}, send lag p50 {s['send_lag']['p50_ms']:.3f}ms p99 {s['send_lag']['p99_ms']:.3f}ms, "
      f"CPU {cpu:.2f}s = {cpu/n*1e6:.0f}µs/request")
PY
done
c=$(cpu "$work/vegeta.bin" bash -c "echo 'GET http://127.0.0.1:18080/' | '$vegeta' attack -rate $RATE -duration ${DUR}s -keepalive=false")
n=$("$vegeta" report -type=json "$work/vegeta.bin" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
echo "vegeta attack -keepalive=false: $n requests, CPU ${c}s = $(awk -v c="$c" -v n="$n" 'BEGIN{printf "%.0f", c*1e6/n}')µs/request"
c=$(cpu "$work/vegeta.bin" bash -c "echo 'GET http://127.0.0.1:18080/' | '$vegeta' attack -rate $RATE -duration ${DUR}s")
n=$("$vegeta" report -type=json "$work/vegeta.bin" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
echo "vegeta attack (keep-alive):     $n requests, CPU ${c}s = $(awk -v c="$c" -v n="$n" 'BEGIN{printf "%.0f", c*1e6/n}')µs/request"
