package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/probe"
	"github.com/nap-k8s/nap/test/forensic"
)

// vegeta is a load generator nobody here wrote (github.com/tsenart/vegeta, built from
// the Go module proxy by hack/tool-bins.sh), run beside napctl probe's engine on the
// rows that ask for it (scenario.vegeta): each request over a new connection, at the
// rate the prober sends over new connections (half of its rate: its new and kept
// connections take turns), the same 2 s timeout, from where the prober sends (node 1,
// or node 2's network namespace). Both count the same outage: their failures over new
// connections must agree (crossCheck).
type vegeta struct {
	cmd         *exec.Cmd
	results     string
	interrupted bool
}

// vegetaMax bounds an attack whatever happens to the test: no measurement is this long.
const vegetaMax = 10 * time.Minute

// startVegeta attacks the prober's target at rate requests per second until stopped
// (at most vegetaMax); the target already answers (startProbe waited for it).
func startVegeta(t *testing.T, target vantage, rate float64) *vegeta {
	t.Helper()
	bin := testenv.Tool(t, "vegeta")
	v := &vegeta{results: filepath.Join(t.TempDir(), "results.bin")}
	v.cmd = onNode(target.node2, bin, "attack", fmt.Sprintf("-rate=%d/1s", int(math.Round(rate))), "-duration="+vegetaMax.String(),
		"-keepalive=false", "-timeout=2s", "-redirects=-1", "-output="+v.results)
	req := "GET " + target.url + "\n"
	if target.host != "" {
		req += "Host: " + target.host + "\n"
	}
	v.cmd.Stdin = strings.NewReader(req)
	v.cmd.Stderr = os.Stderr
	if err := v.cmd.Start(); err != nil {
		t.Fatalf("vegeta attack: %v", err)
	}
	t.Cleanup(func() { v.cmd.Process.Kill() })
	return v
}

// vegetaReport is what `vegeta report -type=json` says, the part read here.
type vegetaReport struct {
	Requests    int            `json:"requests"`
	StatusCodes map[string]int `json:"status_codes"`
	Errors      []string       `json:"errors"`
	// Kinds counts the failures by the prober's kinds, read from each result
	// (vegetaKind).
	Kinds map[probe.Kind]int `json:"-"`
	// Outages are the failures bunched as the prober bunches them (a second apart at
	// most), in seconds from the attack's first request.
	Outages []string `json:"-"`
	// Connected counts the failures that got a connection (no error dialing): the
	// ones a proxy in front logs.
	Connected int `json:"-"`
}

// vegetaResult is one of `vegeta encode -to=json`'s lines, the part read here.
type vegetaResult struct {
	Code      int       `json:"code"`
	Timestamp time.Time `json:"timestamp"`
	Error     string    `json:"error"`
}

// vegetaKind names a vegeta failure by the prober's kinds, from its error text (vegeta
// keeps no error values).
func vegetaKind(r vegetaResult) probe.Kind {
	switch e := r.Error; {
	case e == "" && r.Code >= 500:
		return probe.HTTP5xx
	case e == "" && r.Code >= 200 && r.Code < 400:
		return probe.OK
	case e == "":
		return probe.Status
	case strings.Contains(e, "connection refused"):
		return probe.Refused
	case strings.Contains(e, "reset by peer") || strings.Contains(e, "broken pipe"):
		return probe.Reset
	case strings.Contains(e, "Timeout") || strings.Contains(e, "deadline exceeded") || strings.Contains(e, "timeout"):
		return probe.Timeout
	case strings.HasSuffix(e, "EOF"):
		return probe.EOF
	}
	return probe.Other
}

func (r vegetaReport) failed() int { return r.Requests - r.StatusCodes["200"] }

// interrupt ends the attack's sending (SIGINT: vegeta waits for the requests in
// flight, writes what it has and exits), at once: the prober's stop waits for its own
// requests in flight, up to their 2 s timeout, and vegeta stopped only after it sent
// that long more (a CI run's control: 888 requests against the prober's 693 over new
// connections, its failures diluted by 2 s of successes to 65 against 123).
func (v *vegeta) interrupt() {
	if !v.interrupted {
		v.interrupted = true
		v.cmd.Process.Signal(syscall.SIGINT)
	}
}

// stop ends the attack (interrupt) and reads its report.
func (v *vegeta) stop(t *testing.T) vegetaReport {
	t.Helper()
	v.interrupt()
	done := make(chan error, 1)
	go func() { done <- v.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		v.cmd.Process.Kill()
		t.Fatal("vegeta attack did not end 10 s after SIGINT")
	}
	out, err := exec.Command(testenv.Tool(t, "vegeta"), "report", "-type=json", v.results).Output()
	if err != nil {
		t.Fatalf("vegeta report: %v", err)
	}
	var r vegetaReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("vegeta report: %v\n%s", err, out)
	}
	lines, err := exec.Command(testenv.Tool(t, "vegeta"), "encode", "-to=json", v.results).Output()
	if err != nil {
		t.Fatalf("vegeta encode: %v", err)
	}
	var results []vegetaResult
	for _, l := range strings.Split(string(lines), "\n") {
		if l == "" {
			continue
		}
		var res vegetaResult
		if err := json.Unmarshal([]byte(l), &res); err != nil {
			t.Fatalf("vegeta encode: %v: %q", err, l)
		}
		results = append(results, res)
	}
	// Results are written as they end; their timestamps are when they were sent.
	sort.Slice(results, func(i, j int) bool { return results[i].Timestamp.Before(results[j].Timestamp) })
	r.Kinds = map[probe.Kind]int{}
	var from, last time.Time
	n := 0
	flush := func() {
		if n > 0 {
			first := results[0].Timestamp
			r.Outages = append(r.Outages, fmt.Sprintf("%.2f-%.2f s: %d", from.Sub(first).Seconds(), last.Sub(first).Seconds(), n))
		}
	}
	for _, res := range results {
		k := vegetaKind(res)
		if k == probe.OK {
			continue
		}
		r.Kinds[k]++
		if !strings.Contains(res.Error, "dial tcp") {
			r.Connected++
		}
		if n > 0 && res.Timestamp.Sub(last) > time.Second {
			flush()
			n = 0
		}
		if n == 0 {
			from = res.Timestamp
		}
		last = res.Timestamp
		n++
	}
	flush()
	return r
}

// crossCheck holds napctl probe's count of failures over new connections and vegeta's
// to each other. Each samples the same outage at the same rate, at its own instants,
// over about the same time (vegeta's count is scaled to the prober's requests: the one
// on node 2 is a process of its own, started and stopped a moment apart): each count is
// off by chance by about its square root (which requests chose the stopped pod), and
// their difference by the square root of their sum (agree).
//
// Not through a proxy that keeps a pool of the pods (the ingress, the L7 load balancer:
// traffic.Path.Pools): there each request's pod is the proxy's choice, in turn (round
// robin), not kube-proxy's at random, and two clients that send in a steady interleave
// can each keep meeting the same pods. CI's and this machine's runs measured, through
// the ingress, 84 against vegeta's 44 and 7 against 74 (vegeta's equal to the prober's
// own reused connections' 75); through the L7 load balancer to nginx, 211 against 148.
// Through the ingress vegetaLogged holds vegeta to its access log, as forensic.IngressVerdict
// holds the prober.
func crossCheck(t *testing.T, sc scenario, s probe.Summary, vg vegetaReport) {
	t.Helper()
	ours, total := 0, 0
	if c := s.Modes[probe.New]; c != nil {
		ours, total = c.Failed, c.Requests
	}
	theirs := vg.failed()
	var kinds map[probe.Kind]int
	if c := s.Modes[probe.New]; c != nil {
		kinds = c.ByKind
	}
	t.Logf("%s: over new connections, napctl probe: %d of %d failed %v; vegeta: %d of %d failed %v (status %v, errors %q), vegeta's outages %v; the prober's (all modes) %v",
		sc, ours, total, kinds, theirs, vg.Requests, vg.Kinds, vg.StatusCodes, vg.Errors, vg.Outages, outages(s))
	if vg.Requests < total/2 {
		t.Errorf("%s: vegeta sent %d requests, napctl probe %d over new connections: not the same load", sc, vg.Requests, total)
	}
	if sc.path.path.Pools != nil {
		return
	}
	scaled := float64(theirs)
	if vg.Requests > 0 {
		scaled = float64(theirs) * float64(total) / float64(vg.Requests)
	}
	if bound, ok := agree(float64(ours), scaled); !ok {
		t.Errorf("%s: napctl probe counted %d failures over new connections, vegeta %d (%.0f over as many requests): more apart than chance (%.0f)",
			sc, ours, theirs, scaled, bound)
	}
}

// agree reports whether two counts of the same outage are within chance of each other:
// within 3 standard deviations of their difference, the square root of their sum, plus
// 3 (both see failures or both see none). The bound was the square root of the larger
// count alone until a CI run's 47 against 77 (2.7 standard deviations of the
// difference) failed it.
func agree(a, b float64) (bound float64, ok bool) {
	bound = 3*math.Sqrt(a+b) + 3
	return bound, math.Abs(a-b) <= bound
}

// outages are the prober's outages in vegetaReport.Outages' form, for the log.
func outages(s probe.Summary) []string {
	var out []string
	for _, o := range s.Outages {
		out = append(out, fmt.Sprintf("%.2f-%.2f s: %d %v", o.Start.Seconds(), o.End.Seconds(), o.Failed, o.Modes))
	}
	return out
}

func TestAgree(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		want bool
	}{
		{0, 0, true},
		{0, 3, true},
		{0, 15, false}, // one saw an outage, the other none
		{47, 77, true}, // a CI run's no-delay rollout, 2.7 standard deviations apart
		{37, 37, true},
		{84, 78, true},
		{50, 100, false}, // one counted twice the other
		{0, 47, false},
	} {
		if bound, ok := agree(c.a, c.b); ok != c.want {
			t.Errorf("agree(%v, %v) = %v (bound %.1f), want %v", c.a, c.b, ok, bound, c.want)
		}
	}
}

// vegetaLogged holds vegeta's failures through the ingress to its access log
// (entries): the failed requests it logged (status 499 and above) that are none of the
// prober's failures (fails) are vegeta's, and must be as many as vegeta's failures that
// got a connection, but for a request at either end of the run (2 either way).
func vegetaLogged(t *testing.T, sc scenario, vg vegetaReport, entries []forensic.AccessEntry, fails []probe.Result) {
	t.Helper()
	theirs := forensic.OthersFailed(entries, fails)
	t.Logf("%s: the ingress logged %d failed requests that are not the prober's; vegeta counted %d failures with a connection", sc, theirs, vg.Connected)
	if d := theirs - vg.Connected; d < -2 || d > 2 {
		t.Errorf("%s: the ingress logged %d failed requests of vegeta's, vegeta counted %d with a connection", sc, theirs, vg.Connected)
	}
}
