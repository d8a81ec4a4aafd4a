package forensic

import (
	"fmt"
	"slices"
	"time"

	"github.com/nap-k8s/nap/hack/lb/connlog"
	"github.com/nap-k8s/nap/probe"
)

// LBEntry is the index of the connection the load balancer logged (es) of failed
// request f: from f's address, accepted while the client waited; -1: none.
func LBEntry(es []connlog.Entry, f probe.Result) int {
	if f.Local == "" {
		return -1
	}
	sent := f.Due.Add(f.Lag)
	return slices.IndexFunc(es, func(e connlog.Entry) bool { return e.Client == f.Local && whileWaiting(e.Accepted, sent, f.Latency) })
}

// LBRefused says, when every failed request over a new connection (fails, the probe's)
// went through the load balancer (es, msgs: its log) to a node that refused it (`SC`:
// with externalTrafficPolicy Local, a node's kube-proxy refuses once no pod of the
// Service is left on it) while the load balancer still had that node in service (it
// logged the node DOWN later, or not yet), that the load balancer took the node out
// later than its pods stayed: a route outran the pods, as a late kube-proxy does. ""
// when any failure is otherwise, or none was over a new connection. Times from start.
func LBRefused(es []connlog.Entry, msgs []connlog.Line, fails []probe.Result, start time.Time) string {
	down := map[string]time.Time{} // when each server was first logged DOWN
	for _, m := range msgs {
		if srv, ok := m.Down(); ok && m.At.After(start) {
			if _, seen := down[srv]; !seen {
				down[srv] = m.At
			}
		}
	}
	n, first := 0, ""
	for _, f := range fails {
		if f.Mode != probe.New {
			continue
		}
		i := LBEntry(es, f)
		if i < 0 || es[i].State != "SC" {
			return ""
		}
		e := es[i]
		d, ok := down[e.Backend+"/"+e.Server]
		if ok && d.Before(e.Accepted) {
			return ""
		}
		if n++; first == "" {
			out := "not yet"
			if ok {
				out = fmt.Sprintf("at %.2f s", d.Sub(start).Seconds())
			}
			first = fmt.Sprintf("the load balancer sent a new connection at %.2f s to %s, which refused it (no pod left on it), and took %s out of service %s", e.Accepted.Sub(start).Seconds(), e.Server, e.Server, out)
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d failed requests over new connections were refused by nodes the load balancer still sent to; the first: %s", n, first)
}
