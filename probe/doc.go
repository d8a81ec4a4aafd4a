// Package probe measures what clients see while a service changes: it sends HTTP
// requests open-loop at a fixed rate (on schedule, whether or not earlier ones have
// returned), over new connections and over a keep-alive pool at once, classifies each
// result (ok, refused, reset, timeout, EOF, 5xx, other status), and reports a timeline
// in buckets, the outages, and latency percentiles.
//
// The engine (Run) and the report (Report) are the library; napctl probe is a thin
// command over them, as vegeta separates its lib from its CLI.
package probe
