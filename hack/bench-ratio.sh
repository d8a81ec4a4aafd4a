#!/usr/bin/env bash
# Reads `go test -bench` output on stdin and prints, for each BenchmarkXxxBare /
# BenchmarkXxxDrain pair, the mean ns/op of each and their ratio.
awk '
/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name)
  for (i = 2; i <= NF; i++) if ($(i+1) == "ns/op") { sum[name] += $i; n[name]++ }
}
END {
  print "\n| benchmark | bare ns/op | drain ns/op | ratio |"
  print "|---|---:|---:|---:|"
  for (k in sum) if (k ~ /Bare$/) {
    base = substr(k, 1, length(k) - 4); d = base "Drain"
    if (n[d]) printf "| %s | %.0f | %.0f | %.3f |\n", substr(base, 10), sum[k]/n[k], sum[d]/n[d], (sum[d]/n[d]) / (sum[k]/n[k])
  }
}'
