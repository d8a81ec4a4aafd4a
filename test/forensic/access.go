package forensic

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nap-k8s/nap/probe"
)

// The lab ingress's access log (hack/ingress.yaml keeps the failed requests and the
// slow): the pod each failed request through the ingress went to, which tells a pod
// that exited while the ingress still sent to it (what a wait prevents) from a loss of
// the ingress's own.

// AccessEntry is one request as the ingress logged it.
type AccessEntry struct {
	Start  time.Time
	Took   time.Duration
	Client string // the client's address (host:port)
	Server string // the address of the pod it went to; "": none
	Status int    // what the client got; 499: it gave up first
}

// ParseAccessLog returns the requests to ns's Service "app" in log, the ingress's
// access log (JSON lines; any other line, such as Traefik's own, is skipped): Traefik
// names the service NAMESPACE-SERVICE-PORT@PROVIDER.
func ParseAccessLog(log []byte, ns string) ([]AccessEntry, error) {
	var out []AccessEntry
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("{")) || !bytes.Contains(line, []byte(`"StartUTC"`)) {
			continue
		}
		var e struct {
			StartUTC         time.Time `json:"StartUTC"`
			ClientAddr       string    `json:"ClientAddr"`
			Duration         int64     `json:"Duration"`
			ServiceName      string    `json:"ServiceName"`
			ServiceURL       string    `json:"ServiceURL"`
			DownstreamStatus int       `json:"DownstreamStatus"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("the ingress's access log, line %d: %w", n, err)
		}
		if !strings.HasPrefix(e.ServiceName, ns+"-app-") {
			continue
		}
		server := ""
		if e.ServiceURL != "" {
			// SCHEME://ADDR:PORT: http, https, h2c (gRPC to the pods).
			u, err := url.Parse(e.ServiceURL)
			if err == nil && u.Port() == "" {
				err = errors.New("no port")
			}
			if err != nil {
				return nil, fmt.Errorf("the ingress's access log, line %d: server %q: %w", n, e.ServiceURL, err)
			}
			server = u.Hostname()
		}
		out = append(out, AccessEntry{Start: e.StartUTC, Took: time.Duration(e.Duration), Client: e.ClientAddr, Server: server, Status: e.DownstreamStatus})
	}
	return out, sc.Err()
}

// Pod is what a verdict needs of one pod: when the ingress let it go (zero: not
// seen to) and when its app exited (zero: not seen to; whole seconds, cut: the true
// exit is at most a second later).
type Pod struct {
	Name          string
	LetGo, Exited time.Time
}

// IngressVerdict says whose the failed requests through the ingress were (fails, as
// the probe saw them; entries, what the ingress logged), and why. Each failure is the
// entry from the same client address (the probe's Local, the log's ClientAddr) that
// started while the client waited. A request that got no connection to the ingress
// never reached it, and the ingress's pod does not leave here: it was lost before any
// route to a pod, the ingress's own. A request is the hold's when it went to a pod the
// ingress had not let go and that pod's app exited before the request ended: it was
// still routed when it left. It is the ingress's when it went to a pod the ingress had
// let go, or to a pod whose app ran until after the request ended (the pod did not
// leave; the ingress or the machine stalled), or to no pod. A request the ingress took
// but did not log, or one to an address of no pod seen, is unexplained; the first kind
// is counted, and the first named with the entry from its address nearest to it (one
// the ingress began after the client gave up starts late). Times in why are from start.
func IngressVerdict(entries []AccessEntry, fails []probe.Result, pods map[string]Pod, start time.Time) Verdict {
	if len(fails) == 0 {
		return Verdict{Why: "the probe kept no failed request to look up"}
	}
	at := func(t time.Time) string { return fmt.Sprintf("%.2f s", t.Sub(start).Seconds()) }
	as := LoggedAs(entries, fails)
	// Every failure is looked up: one the log lacks makes the whole loss unexplained,
	// even beside a pod's exit.
	var unexplainedWhy, exitWhy, unloggedWhy string
	var reasons []string
	exits, unlogged := 0, 0
	for k, f := range fails {
		sent := f.Due.Add(f.Lag)
		what := fmt.Sprintf("at %s (%s over a %s connection", at(sent), f.Kind, f.Mode)
		if f.Local == "" {
			reasons = append(reasons, what+") got no connection to the ingress")
			continue
		}
		what += " from " + f.Local + ")"
		i := as[k]
		if i < 0 {
			unlogged++
			if unloggedWhy == "" {
				unloggedWhy = fmt.Sprintf("a request %s reached the ingress, which logged nothing of it", what)
				// The entry from that address nearest to it: a request the ingress began
				// only after the client gave up (a stalled ingress) starts late.
				if j := nearest(entries, f.Local, sent); j >= 0 {
					e := entries[j]
					unloggedWhy += fmt.Sprintf(" (the nearest entry from that address started at %s, logged %d after %.1f s)", at(e.Start), e.Status, e.Took.Seconds())
				}
			}
			continue
		}
		e := entries[i]
		what += fmt.Sprintf(", logged %d after %.1f s,", e.Status, e.Took.Seconds())
		p, ok := pods[e.Server]
		end := e.Start.Add(e.Took)
		switch {
		case e.Server == "":
			reasons = append(reasons, what+" to no pod")
		case !ok:
			unexplainedWhy = cmp.Or(unexplainedWhy, fmt.Sprintf("a request %s went to %s, the address of no pod seen", what, e.Server))
		case !p.LetGo.IsZero() && !e.Start.Before(p.LetGo):
			reasons = append(reasons, fmt.Sprintf("%s to pod %s, let go at %s", what, p.Name, at(p.LetGo)))
		case p.Exited.IsZero() || !p.Exited.Before(end):
			reasons = append(reasons, fmt.Sprintf("%s to pod %s, running until after it", what, p.Name))
		default:
			exits++
			exitWhy = cmp.Or(exitWhy, fmt.Sprintf("a request %s went to pod %s, whose app exited at %s while the ingress still sent to it", what, p.Name, at(p.Exited)))
		}
	}
	switch {
	case unlogged > 0:
		return Verdict{Why: fmt.Sprintf("%d of %d failed requests are not in the ingress's log; the first: %s", unlogged, len(fails), unloggedWhy)}
	case unexplainedWhy != "":
		return Verdict{Why: unexplainedWhy}
	case exits > 0:
		return Verdict{Why: fmt.Sprintf("%d of %d failed requests went to pods that exited while routed; the first: %s", exits, len(fails), exitWhy), Cause: PodExit}
	}
	return Verdict{Why: "the ingress lost them, not a pod's exit: " + strings.Join(reasons, "; "), Cause: IngressOwn}
}

// LoggedAs gives, for each of the probe's requests rs, the index of the entry the
// ingress logged of it: one from the request's address (Local) that started while the
// client waited, each entry taken once (a connection carries one request at a time);
// -1: none, or the request got no connection.
func LoggedAs(entries []AccessEntry, rs []probe.Result) []int {
	used := make([]bool, len(entries))
	out := make([]int, len(rs))
	for k, r := range rs {
		out[k] = -1
		if r.Local == "" {
			continue
		}
		sent := r.Due.Add(r.Lag)
		for i, e := range entries {
			if !used[i] && e.Client == r.Local && whileWaiting(e.Start, sent, r.Latency) {
				used[i], out[k] = true, i
				break
			}
		}
	}
	return out
}

// OthersFailed counts the failed requests in entries (status 499 and above) that are
// none of fails (LoggedAs): another client's.
func OthersFailed(entries []AccessEntry, fails []probe.Result) int {
	theirs := make([]bool, len(entries))
	for i, e := range entries {
		theirs[i] = e.Status >= 499
	}
	for _, i := range LoggedAs(entries, fails) {
		if i >= 0 {
			theirs[i] = false
		}
	}
	n := 0
	for _, t := range theirs {
		if t {
			n++
		}
	}
	return n
}

// nearest is the index of the entry from client that started nearest to sent; -1: none.
func nearest(entries []AccessEntry, client string, sent time.Time) int {
	j := -1
	for i, e := range entries {
		if e.Client == client && (j < 0 || (e.Start.Sub(sent)).Abs() < entries[j].Start.Sub(sent).Abs()) {
			j = i
		}
	}
	return j
}
