package probe

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"time"
)

// Summary is the JSON report: see docs/probe.md for the schema.
type Summary struct {
	URL             string           `json:"url"`
	Rate            float64          `json:"rate"`
	Retry           bool             `json:"keepalive_retry"` // Options.Retry: Go's silent resend on a closed keep-alive connection
	MaxInFlight     int              `json:"max_in_flight"`
	BucketSeconds   float64          `json:"bucket_seconds"`
	DurationSeconds float64          `json:"duration_seconds"`
	Total           Counts           `json:"total"`
	Modes           map[Mode]*Counts `json:"modes"`
	Outages         []Outage         `json:"outages"`
	LongestOutage   float64          `json:"longest_outage_seconds"`
	Latency         Percentiles      `json:"latency"`
	SendLag         Percentiles      `json:"send_lag"`
	Buckets         []Bucket         `json:"buckets"`
	Command         *CommandResult   `json:"command,omitempty"`
}

// CommandResult is what --during ran.
type CommandResult struct {
	Command  string  `json:"command"`
	ExitCode int     `json:"exit_code"`
	Seconds  float64 `json:"seconds"`
}

// Summarize collects the report of a Run with opts for output.
func (r *Report) Summarize(opts Options, elapsed time.Duration, cmd *CommandResult) Summary {
	outages := r.Outages()
	if outages == nil {
		outages = []Outage{}
	}
	buckets := r.Buckets
	if buckets == nil {
		buckets = []Bucket{}
	}
	opts = opts.withDefaults() // as Run used them
	return Summary{
		URL: opts.URL, Rate: opts.Rate, Retry: opts.Retry, MaxInFlight: opts.MaxInFlight, BucketSeconds: r.Bucket.Seconds(), DurationSeconds: elapsed.Seconds(),
		Total: r.Total(), Modes: r.Totals, Outages: outages, LongestOutage: r.LongestOutage().Seconds(),
		Latency: r.Latency(), SendLag: r.Lag(), Buckets: buckets, Command: cmd,
	}
}

// JSON writes s as indented JSON.
func JSON(w io.Writer, s Summary) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(s)
}

// kindsLine names the failures of c by kind, and the statuses behind the status kinds:
// " (refused 3, 5xx 12: 502 ×9, 503 ×3)".
func kindsLine(c Counts) string {
	var parts []string
	for _, k := range Kinds {
		n := c.ByKind[k]
		if n == 0 || k == OK {
			continue
		}
		p := fmt.Sprintf("%s %d", k, n)
		if codes := statusesOf(c, k); codes != "" {
			p += ": " + codes
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// statusesOf lists the status codes of c that fall in kind k ("" for all of them),
// "502 ×9, 503 ×3".
func statusesOf(c Counts, k Kind) string {
	codes := make([]int, 0, len(c.ByStatus))
	for code := range c.ByStatus {
		if k == "" || classify(code, nil) == k {
			codes = append(codes, code)
		}
	}
	slices.Sort(codes)
	s := make([]string, len(codes))
	for i, code := range codes {
		s[i] = fmt.Sprintf("%d ×%d", code, c.ByStatus[code])
	}
	return strings.Join(s, ", ")
}

// Text writes the human summary.
func Text(w io.Writer, s Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d requests in %.1fs at %.0f/s, %d failed%s\n", s.URL, s.Total.Requests, s.DurationSeconds, s.Rate, s.Total.Failed, kindsLine(s.Total))
	modes := make([]Mode, 0, len(s.Modes))
	for m := range s.Modes {
		modes = append(modes, m)
	}
	slices.Sort(modes)
	for _, m := range modes {
		c := s.Modes[m]
		fmt.Fprintf(&b, "  %-5s %d requests, %d failed%s\n", m, c.Requests, c.Failed, kindsLine(*c))
	}
	if codes := statusesOf(s.Total, ""); codes != "" {
		fmt.Fprintf(&b, "status codes  %s\n", codes)
	}
	if s.Retry {
		b.WriteString("keep-alive    a request on a closed keep-alive connection was resent once, silently (--retry), as Go clients do\n")
	} else {
		b.WriteString("keep-alive    no silent resend: a request on a closed keep-alive connection counts as failed\n")
	}
	fmt.Fprintf(&b, "latency (ok)  p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms\n", s.Latency.P50, s.Latency.P90, s.Latency.P99, s.Latency.Max)
	fmt.Fprintf(&b, "send lag      p50 %.3fms  p99 %.3fms  max %.3fms\n", s.SendLag.P50, s.SendLag.P99, s.SendLag.Max)
	if len(s.Outages) == 0 {
		b.WriteString("no outage\n")
	}
	for _, o := range s.Outages {
		fmt.Fprintf(&b, "outage %6.2fs – %6.2fs (%.2fs): %d failed, %s, over %s\n", o.Start.Seconds(), o.End.Seconds(), (o.End - o.Start).Seconds(), o.Failed, joinKinds(o.Kinds), joinModes(o.Modes))
	}
	if s.Command != nil {
		fmt.Fprintf(&b, "command %q exited %d after %.1fs\n", s.Command.Command, s.Command.ExitCode, s.Command.Seconds)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func joinKinds(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, "+")
}

func joinModes(ms []Mode) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = string(m)
	}
	return strings.Join(s, "+") + " connections"
}

// SVG writes a timeline: requests per bucket, ok in grey, failures in red stacked on
// top, outages shaded, the seconds along the bottom.
func SVG(w io.Writer, s Summary) error {
	const W, H, left, bottom, top = 900.0, 260.0, 50.0, 30.0, 30.0
	n := max(len(s.Buckets), 1)
	peak := 1
	for _, b := range s.Buckets {
		peak = max(peak, b.Requests)
	}
	bw := (W - left - 10) / float64(n)
	y := func(v int) float64 { return H - bottom - float64(v)/float64(peak)*(H-bottom-top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" font-family="sans-serif" font-size="11">`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%g" y="16" font-size="13">%s — %d requests, %d failed, longest outage %.2fs</text>`+"\n", left, html.EscapeString(s.URL), s.Total.Requests, s.Total.Failed, s.LongestOutage)
	for _, o := range s.Outages {
		x0 := left + o.Start.Seconds()/s.BucketSeconds*bw
		x1 := left + o.End.Seconds()/s.BucketSeconds*bw + bw/4
		fmt.Fprintf(&b, `<rect x="%.1f" y="%g" width="%.1f" height="%g" fill="#f4c7c3"><title>outage %.2fs: %s</title></rect>`+"\n", x0, top, max(x1-x0, 2), H-bottom-top, (o.End - o.Start).Seconds(), joinKinds(o.Kinds))
	}
	for i, bk := range s.Buckets {
		x := left + float64(i)*bw
		okTop := y(bk.Requests - bk.Failed)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#9aa0a6"/>`, x, okTop, max(bw-1, 0.5), H-bottom-okTop)
		if bk.Failed > 0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d93025"><title>%.0fs: %d failed%s</title></rect>`, x, y(bk.Requests), max(bw-1, 0.5), okTop-y(bk.Requests), bk.OffsetSeconds, bk.Failed, kindsLine(bk.Counts))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#333"/>`+"\n", left, H-bottom, W-10, H-bottom)
	step := max(1, n/10)
	for i := 0; i < n; i += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g">%gs</text>`+"\n", left+float64(i)*bw, H-bottom+14, float64(i)*s.BucketSeconds)
	}
	fmt.Fprintf(&b, `<text x="4" y="%g">%d/bucket</text>`+"\n", top+4, peak)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// HTML writes a self-contained page: the SVG timeline and the text summary.
func HTML(w io.Writer, s Summary) error {
	var svg, text strings.Builder
	if err := SVG(&svg, s); err != nil {
		return err
	}
	if err := Text(&text, s); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>napctl probe: %s</title></head>\n<body style=\"font-family:sans-serif;max-width:960px;margin:2em auto\">\n%s<pre>%s</pre>\n</body></html>\n",
		html.EscapeString(s.URL), svg.String(), html.EscapeString(text.String()))
	return err
}
