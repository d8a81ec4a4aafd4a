package probe

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Summary is the JSON report: see docs/probe.md for the schema.
type Summary struct {
	// Title names what was measured, for a person ("a rolling restart behind the
	// ingress, no preStop"); the plot's heading when set.
	Title           string           `json:"title,omitempty"`
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
	// FirstErrors are, by failed kind, the first failure's error as the client saw it:
	// what an "other" was, which address refused.
	FirstErrors map[Kind]string `json:"first_errors,omitempty"`
	Latency     Percentiles     `json:"latency"`
	SendLag     Percentiles     `json:"send_lag"`
	Buckets     []Bucket        `json:"buckets"`
	// Streams is what held streams saw (Options.Streams), instead of requests.
	Streams *StreamReport  `json:"streams,omitempty"`
	Command *CommandResult `json:"command,omitempty"`
	// Watch names what --watch watched; Events are what happened to it, in time order.
	Watch  string  `json:"watch,omitempty"`
	Events []Event `json:"events,omitempty"`
	// Failures are the failed requests themselves, in the order they ended, for a
	// caller in the same process that checks each one against another record (a
	// proxy's access log); in the JSON only as FailedRequests.
	Failures []Result `json:"-"`
	// FailedRequests are Failures as the JSON lists them, when asked (ListFailures:
	// napctl probe --list-failures): for a caller in another process.
	FailedRequests []FailedRequest `json:"failed_requests,omitempty"`
}

// FailedRequest is a failed request as the JSON lists it: when it was due (the
// clock's, to the nanosecond, to be set beside another record's times), over which
// connection mode, how it failed, and the client's end of its connection.
type FailedRequest struct {
	Due    time.Time `json:"due"`
	Mode   Mode      `json:"mode"`
	Kind   Kind      `json:"kind"`
	Status int       `json:"status,omitempty"`
	Error  string    `json:"error,omitempty"`
	Local  string    `json:"local,omitempty"`
}

// ListFailures puts s's Failures into its JSON (FailedRequests).
func (s *Summary) ListFailures() {
	s.FailedRequests = make([]FailedRequest, len(s.Failures))
	for i, f := range s.Failures {
		s.FailedRequests[i] = FailedRequest{Due: f.Due, Mode: f.Mode, Kind: f.Kind, Status: f.Code, Error: f.Err, Local: f.Local}
	}
}

// ListedFailures are the failed requests a JSON report listed (FailedRequests), as a
// caller in the same process would have had them (Failures), with what the JSON keeps.
func (s Summary) ListedFailures() []Result {
	out := make([]Result, len(s.FailedRequests))
	for i, f := range s.FailedRequests {
		out[i] = Result{Due: f.Due, Mode: f.Mode, Kind: f.Kind, Code: f.Status, Err: f.Error, Local: f.Local}
	}
	return out
}

// Event is something that happened to the service under test while it was probed, put
// on the timeline next to the failures: a pod deleted, an endpoint removed from its
// Service. The probe itself knows nothing of Kubernetes: package observe makes these,
// with their words and their mark.
type Event struct {
	Offset  time.Duration `json:"-"` // from the report's start
	Seconds float64       `json:"offset_seconds"`
	Kind    string        `json:"kind"`
	Pod     string        `json:"pod"`
	Node    string        `json:"node,omitempty"`
	Service string        `json:"service,omitempty"`
	Detail  string        `json:"detail,omitempty"`
	Words   string        `json:"words"` // what happened, said for a person
	Mark    string        `json:"mark"`  // how the plot marks it: MarkServing, MarkLeaving or MarkChange
}

// The marks of events, a colour each in the plot.
const (
	MarkServing = "serving" // a pod starts serving
	MarkLeaving = "leaving" // a pod stops: termination, not ready, exited, deleted
	MarkChange  = "change"  // a route changes: an endpoint added, ready, terminating, removed
)

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
	buckets = slices.Clone(buckets)
	for i := range buckets {
		buckets[i].LatencyP99 = float64(r.bucketLat[i].quantile(0.99)) / float64(time.Millisecond)
	}
	opts = opts.Defaults() // as Run used them
	return Summary{
		URL: opts.URL, Rate: opts.Rate, Retry: opts.Retry, MaxInFlight: opts.MaxInFlight, BucketSeconds: r.Bucket.Seconds(), DurationSeconds: elapsed.Seconds(),
		Total: r.Total(), Modes: r.Totals, Outages: outages, LongestOutage: r.LongestOutage().Seconds(),
		Latency: r.Latency(), SendLag: r.Lag(), Buckets: buckets, Command: cmd, FirstErrors: r.firstErrors(),
		Failures: slices.Clone(r.fails),
	}
}

// firstErrors is, by kind, the error of the first failure of that kind that had one.
func (r *Report) firstErrors() map[Kind]string {
	var out map[Kind]string
	for _, f := range r.fails {
		if f.Err == "" {
			continue
		}
		if _, ok := out[f.Kind]; !ok {
			if out == nil {
				out = map[Kind]string{}
			}
			out[f.Kind] = f.Err
		}
	}
	return out
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
	if s.Title != "" {
		fmt.Fprintln(&b, s.Title)
	}
	if r := s.Streams; r != nil {
		fmt.Fprintf(&b, "%s: %d %s streams held for %.1fs: %d connections delivered, %d ended cleanly, %d broken, %d delivered nothing; %d messages, %d lost\n",
			s.URL, r.Streams, r.Protocol, s.DurationSeconds, r.Opened, r.Clean, r.Broken, r.ConnectFailed, r.Messages, r.Lost)
		if r.Reconnect.Max > 0 {
			fmt.Fprintf(&b, "reconnect (end to the next first message) p50 %.0f ms  p99 %.0f ms  max %.0f ms\n", r.Reconnect.P50, r.Reconnect.P99, r.Reconnect.Max)
		}
		if r.FirstBroken != "" {
			fmt.Fprintf(&b, "first broken: %s\n", r.FirstBroken)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
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
	for _, k := range Kinds {
		if e, ok := s.FirstErrors[k]; ok {
			fmt.Fprintf(&b, "first %-7s %s\n", k, e)
		}
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
		for _, line := range around(s.Events, o) {
			b.WriteString("  " + line + "\n")
		}
	}
	if s.Command != nil {
		fmt.Fprintf(&b, "command %q exited %d after %.1fs\n", s.Command.Command, s.Command.ExitCode, s.Command.Seconds)
	}
	if s.Watch != "" {
		fmt.Fprintf(&b, "events of %s: %d\n", s.Watch, len(s.Events))
		for _, e := range s.Events {
			fmt.Fprintf(&b, "  %7.2fs  pod %s%s  %s\n", e.Offset.Seconds(), e.Pod, onNode(e), e.Words)
		}
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

// KindColors are the failure kinds' colours in the plot, one each.
var KindColors = map[Kind]string{
	Refused: "#d93025", Reset: "#e8710a", Timeout: "#f9ab00", EOF: "#a142f4",
	HTTP5xx: "#8c1d18", Status: "#f538a0", Other: "#5f6368", Unsent: "#202124",
}

// The plot's other colours: successful requests, the latency p99 line, and the event
// markers by what they say of a pod (serving, leaving, an endpoint change).
const (
	okColor       = "#c4c7c5"
	latencyColor  = "#12b5cb"
	servingColor  = "#188038"
	leavingColor  = "#e37400"
	endpointColor = "#1967d2"
)

func eventColor(mark string) string {
	switch mark {
	case MarkServing:
		return servingColor
	case MarkLeaving:
		return leavingColor
	}
	return endpointColor
}

// SVG writes a timeline: requests per bucket, ok in grey and the failures stacked on
// top by kind (a colour each), the p99 latency of each bucket as a line on its own
// scale, outages shaded, and, with --watch, each event as a marker above the bars (its
// words in a tooltip); the seconds along the bottom, a legend below.
//
// Held streams (Summary.Streams) are drawn by how their connections ended instead.
func SVG(w io.Writer, s Summary) error {
	if s.Streams != nil {
		return streamsSVG(w, s)
	}
	const W, H, left, right, bottom, top, strip = plotW, plotH, plotLeft, plotRight, plotBottom, plotTop, plotStrip
	n := max(len(s.Buckets), 1)
	peak := 1
	var latPeak float64
	for _, b := range s.Buckets {
		peak = max(peak, b.Requests)
		latPeak = max(latPeak, b.LatencyP99)
	}
	plotTop := top + strip // the bars below the event strip
	bw := (W - left - right) / float64(n)
	x := func(sec float64) float64 { return left + max(sec, 0)/s.BucketSeconds*bw }
	y := func(v int) float64 { return H - bottom - float64(v)/float64(peak)*(H-bottom-plotTop) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" font-family="sans-serif" font-size="11">`+"\n", W, H)
	title := fmt.Sprintf("%s — %d requests, %d failed, longest outage %.2fs", cmp.Or(s.Title, s.URL), s.Total.Requests, s.Total.Failed, s.LongestOutage)
	if s.Watch != "" {
		title += fmt.Sprintf("; %d events of %s", len(s.Events), s.Watch)
	}
	fmt.Fprintf(&b, `<text x="%g" y="16" font-size="13">%s</text>`+"\n", left, html.EscapeString(title))
	for _, o := range s.Outages {
		x0, x1 := x(o.Start.Seconds()), x(o.End.Seconds())+bw/4
		fmt.Fprintf(&b, `<rect x="%.1f" y="%g" width="%.1f" height="%g" fill="#fce8e6"><title>outage %.2fs: %s</title></rect>`+"\n", x0, plotTop, max(x1-x0, 2), H-bottom-plotTop, (o.End - o.Start).Seconds(), joinKinds(o.Kinds))
	}
	for i, bk := range s.Buckets {
		bx := left + float64(i)*bw
		base := bk.Requests - bk.Failed
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, bx, y(base), max(bw-1, 0.5), H-bottom-y(base), okColor)
		for _, k := range Kinds {
			c := bk.ByKind[k]
			if k == OK || c == 0 {
				continue
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%gs: %d %s</title></rect>`, bx, y(base+c), max(bw-1, 0.5), y(base)-y(base+c), KindColors[k], bk.OffsetSeconds, c, k)
			base += c
		}
		b.WriteString("\n")
	}
	if latPeak > 0 {
		ly := func(ms float64) float64 { return H - bottom - ms/latPeak*(H-bottom-plotTop) }
		var pts []string
		for i, bk := range s.Buckets {
			if bk.Requests-bk.Failed > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", left+(float64(i)+0.5)*bw, ly(bk.LatencyP99)))
			}
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"><title>latency p99 per bucket</title></polyline>`+"\n", strings.Join(pts, " "), latencyColor)
		fmt.Fprintf(&b, `<text x="%g" y="%g" fill="%s">p99 %.0f ms</text>`+"\n", W-right+4, plotTop+4, latencyColor, latPeak)
	}
	eventsAndAxis(&b, s, n, s.BucketSeconds, x, bw)
	fmt.Fprintf(&b, `<text x="4" y="%g">%d/bucket</text>`+"\n", plotTop+4, peak)
	// The legend: the kinds that occurred, then the rest of what is drawn.
	item := legend(&b)
	item(okColor, "ok")
	for _, k := range Kinds {
		if k != OK && s.Total.ByKind[k] > 0 {
			item(KindColors[k], string(k))
		}
	}
	if latPeak > 0 {
		item(latencyColor, "latency p99")
	}
	return finish(w, &b, s, item)
}

// The plot's frame: its size and margins, the event strip above the bars.
const (
	plotW, plotH, plotLeft, plotRight, plotBottom, plotTop, plotStrip = 900.0, 340.0, 50.0, 70.0, 60.0, 30.0, 36.0
)

// eventsAndAxis draws what every timeline has below its bars: the events (with --watch)
// as markers in the strip above them, the time axis and its seconds.
func eventsAndAxis(b *strings.Builder, s Summary, n int, bucketSeconds float64, x func(float64) float64, bw float64) {
	const W, H, left, right, bottom, top, strip = plotW, plotH, plotLeft, plotRight, plotBottom, plotTop, plotStrip
	end := float64(n) * bucketSeconds
	for _, e := range s.Events {
		if e.Offset.Seconds() > end {
			continue // after the last request: off the timeline
		}
		ex := x(e.Offset.Seconds())
		fmt.Fprintf(b, `<rect x="%.1f" y="%g" width="4" height="%g" fill="%s"><title>%.2fs pod %s%s: %s</title></rect>`+"\n", ex-2, top+4, strip-8, eventColor(e.Mark), e.Offset.Seconds(), html.EscapeString(e.Pod), html.EscapeString(onNode(e)), html.EscapeString(e.Words))
	}
	if s.Watch != "" {
		fmt.Fprintf(b, `<text x="4" y="%g">events</text>`+"\n", top+strip/2+4)
	}
	fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#333"/>`+"\n", left, H-bottom, W-right, H-bottom)
	step := max(1, n/10)
	for i := 0; i < n; i += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%g">%gs</text>`+"\n", left+float64(i)*bw, H-bottom+14, math.Round(float64(i)*bucketSeconds*1000)/1000)
	}
}

// finish adds the events' colours to the legend (with --watch), closes the SVG and
// writes it.
func finish(w io.Writer, b *strings.Builder, s Summary, item func(color, label string)) error {
	if s.Watch != "" {
		item(servingColor, "pod serving")
		item(leavingColor, "pod leaving")
		item(endpointColor, "endpoint")
	}
	b.WriteString("\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// legend returns a function that adds an item to the legend below the axis, left to
// right.
func legend(b *strings.Builder) func(color, label string) {
	lx := plotLeft
	return func(color, label string) {
		fmt.Fprintf(b, `<rect x="%.1f" y="%g" width="10" height="10" fill="%s"/><text x="%.1f" y="%g">%s</text>`, lx, plotH-plotBottom+26, color, lx+13, plotH-plotBottom+35, label)
		lx += 13 + 7*float64(len(label)) + 12
	}
}

// The stream plot's colours: how connections ended, and what was lost.
const (
	cleanColor         = "#188038"
	brokenColor        = "#d93025"
	connectFailedColor = "#f9ab00"
	lostColor          = "#a142f4"
	messagesColor      = "#12b5cb"
)

// streamsSVG is SVG for held streams: per bucket the connections' ends stacked by how
// they ended (clean, broken, delivered nothing) with the messages lost on top, the
// messages received as a line on its own scale, and the events and axis as for
// requests.
func streamsSVG(w io.Writer, s Summary) error {
	const W, H, left, right, bottom, top, strip = plotW, plotH, plotLeft, plotRight, plotBottom, plotTop, plotStrip
	r := s.Streams
	n := max(len(r.Buckets), 1)
	bucketSeconds := r.BucketSeconds
	if bucketSeconds <= 0 {
		bucketSeconds = AutoBucket.Seconds()
	}
	peak, msgPeak := 1, 0
	for _, bk := range r.Buckets {
		peak = max(peak, bk.Clean+bk.Broken+bk.ConnectFailed+bk.Lost)
		msgPeak = max(msgPeak, bk.Messages)
	}
	plotTop := top + strip
	bw := (W - left - right) / float64(n)
	x := func(sec float64) float64 { return left + max(sec, 0)/bucketSeconds*bw }
	y := func(v int) float64 { return H - bottom - float64(v)/float64(peak)*(H-bottom-plotTop) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" font-family="sans-serif" font-size="11">`+"\n", W, H)
	title := fmt.Sprintf("%s — %d %s streams: %d ends clean, %d broken, %d connections delivered nothing, %d messages lost", cmp.Or(s.Title, s.URL), r.Streams, r.Protocol, r.Clean, r.Broken, r.ConnectFailed, r.Lost)
	if s.Watch != "" {
		title += fmt.Sprintf("; %d events of %s", len(s.Events), s.Watch)
	}
	fmt.Fprintf(&b, `<text x="%g" y="16" font-size="13">%s</text>`+"\n", left, html.EscapeString(title))
	for i, bk := range r.Buckets {
		bx, base := left+float64(i)*bw, 0
		for _, part := range []struct {
			n            int
			color, words string
		}{{bk.Clean, cleanColor, "ended cleanly"}, {bk.Broken, brokenColor, "broken"}, {bk.ConnectFailed, connectFailedColor, "delivered nothing"}, {bk.Lost, lostColor, "messages lost"}} {
			if part.n == 0 {
				continue
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%gs: %d %s</title></rect>`, bx, y(base+part.n), max(bw-1, 0.5), y(base)-y(base+part.n), part.color, bk.OffsetSeconds, part.n, part.words)
			base += part.n
		}
		b.WriteString("\n")
	}
	if msgPeak > 0 {
		my := func(m int) float64 { return H - bottom - float64(m)/float64(msgPeak)*(H-bottom-plotTop) }
		var pts []string
		for i, bk := range r.Buckets {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", left+(float64(i)+0.5)*bw, my(bk.Messages)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"><title>messages received per bucket</title></polyline>`+"\n", strings.Join(pts, " "), messagesColor)
		fmt.Fprintf(&b, `<text x="%g" y="%g" fill="%s">%d msgs</text>`+"\n", W-right+4, plotTop+4, messagesColor, msgPeak)
	}
	eventsAndAxis(&b, s, n, bucketSeconds, x, bw)
	fmt.Fprintf(&b, `<text x="4" y="%g">%d/bucket</text>`+"\n", plotTop+4, peak)
	item := legend(&b)
	item(cleanColor, "ended cleanly")
	if r.Broken > 0 {
		item(brokenColor, "broken")
	}
	if r.ConnectFailed > 0 {
		item(connectFailedColor, "delivered nothing")
	}
	if r.Lost > 0 {
		item(lostColor, "messages lost")
	}
	if msgPeak > 0 {
		item(messagesColor, "messages")
	}
	return finish(w, &b, s, item)
}

// Stack writes the timelines of summaries one above the other as one SVG: a rollout
// without a fix and with it, each with its Title.
func Stack(w io.Writer, summaries ...Summary) error {
	var b strings.Builder
	const W, H = 900.0, 340.0 // SVG's
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g">`+"\n", W, H*float64(len(summaries)))
	for i, s := range summaries {
		var one bytes.Buffer
		if err := SVG(&one, s); err != nil {
			return err
		}
		// The plot nested at its place: its own viewBox scales it into the frame.
		fmt.Fprintf(&b, `<svg x="0" y="%g" width="%g" height="%g"%s`, H*float64(i), W, H, strings.TrimPrefix(one.String(), "<svg"))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ReadSummary reads a JSON report (-o json) back: to render it again, or several
// together (Stack).
func ReadSummary(r io.Reader) (Summary, error) {
	var s Summary
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return Summary{}, fmt.Errorf("a probe report (napctl probe -o json): %w", err)
	}
	for i := range s.Events {
		s.Events[i].Offset = seconds(s.Events[i].Seconds)
	}
	if s.BucketSeconds <= 0 {
		return Summary{}, fmt.Errorf("a probe report (napctl probe -o json): no bucket_seconds")
	}
	return s, nil
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
	_, err := fmt.Fprintf(w, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>napctl probe: %s</title></head>\n<body style=\"font-family:sans-serif;max-width:960px;margin:2em auto\">\n%s<pre style=\"white-space:pre-wrap\">%s</pre>\n</body></html>\n",
		html.EscapeString(cmp.Or(s.Title, s.URL)), svg.String(), html.EscapeString(text.String()))
	return err
}

// EventWindow is how far before an outage (and after it) events are named as what may
// explain it: a pod's deletion precedes the failures it causes by up to its preStop
// delay, a route's removal follows them.
const (
	EventWindowBefore = 5 * time.Second
	EventWindowAfter  = time.Second
)

// around names, pod by pod, the events near outage o: "pod web-x on node-2: termination
// began 0.91s (grace 30s), left Service web's EndpointSlice 1.40s, deleted 1.62s".
func around(events []Event, o Outage) []string {
	var pods []string
	by := map[string][]string{}
	node := map[string]string{}
	for _, e := range events {
		if e.Offset < o.Start-EventWindowBefore || e.Offset > o.End+EventWindowAfter {
			continue
		}
		if _, seen := by[e.Pod]; !seen {
			pods = append(pods, e.Pod)
		}
		by[e.Pod] = append(by[e.Pod], fmt.Sprintf("%s %.2fs", e.Words, e.Offset.Seconds()))
		node[e.Pod] = onNode(e)
	}
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = fmt.Sprintf("pod %s%s: %s", p, node[p], strings.Join(by[p], ", "))
	}
	return out
}

func onNode(e Event) string {
	if e.Node == "" {
		return ""
	}
	return " on " + e.Node
}
