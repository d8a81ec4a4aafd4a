#!/usr/bin/env bash
# Reads `go test -bench` output on stdin and prints, for each pair of benchmarks named
# <name><BASE> and <name><OTHER> (default Bare and Drain), the mean ns/op of each and
# their ratio OTHER/BASE.
#   hack/bench-ratio.sh              BenchmarkXxxBare vs BenchmarkXxxDrain
#   hack/bench-ratio.sh Lint Inject  BenchmarkInjectVsLint/Lint vs .../Inject
base=${1:-Bare}
other=${2:-Drain}
awk -v B="$base" -v O="$other" '
/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name)
  for (i = 2; i <= NF; i++) if ($(i+1) == "ns/op") { sum[name] += $i; n[name]++ }
}
END {
  printf "\n| benchmark | %s ns/op | %s ns/op | ratio |\n", B, O
  print "|---|---:|---:|---:|"
  for (k in sum) if (substr(k, length(k) - length(B) + 1) == B) {
    stem = substr(k, 1, length(k) - length(B)); d = stem O
    if (n[d]) printf "| %s | %.0f | %.0f | %.3f |\n", substr(stem, 10), sum[k]/n[k], sum[d]/n[d], (sum[d]/n[d]) / (sum[k]/n[k])
  }
}'
