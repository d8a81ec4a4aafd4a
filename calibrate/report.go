package calibrate

import (
	"encoding/json"
	"time"

	"github.com/nap-k8s/nap/probe"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// Path is a traffic path as calibrate opened it: its name, and the URL that reaches the
// calibration workload's pods through it (Open).
type Path struct {
	Name string `json:"name"` // the traffic path's (traffic.All)
	URL  string `json:"url"`
}

// Round is one pod replaced in a round.
type Round struct {
	Round int    `json:"round"`
	Pod   string `json:"pod"`
	// Disruption is how the pod went: RollingRestart or ScaleDown.
	Disruption string `json:"disruption"`
	// Tails are, by path, how long after its termination began the pod's last answer on
	// that path was: 0 when it answered there only before; absent when the path never
	// sent it anything.
	Tails map[string]float64 `json:"tails_seconds"`
	// Censored: the pod was still answering when its hold ended; its tails are at least
	// these.
	Censored bool `json:"censored,omitempty"`
}

// Stats are one path's tails over the rounds.
type Stats struct {
	Path    Path    `json:"path"`
	Samples int     `json:"samples"`
	P50     float64 `json:"p50_seconds"`
	P99     float64 `json:"p99_seconds"`
	Max     float64 `json:"max_seconds"`
	// Failed are requests on the path that failed during the calibration: none is
	// expected, every deleted pod keeps serving through its hold.
	Failed      int                `json:"failed"`
	FailedKinds map[probe.Kind]int `json:"failed_by_kind,omitempty"`
	Requests    int                `json:"requests"`
}

// Report is a calibration's outcome.
type Report struct {
	Namespace string  `json:"namespace"`
	Rounds    []Round `json:"rounds"` // a sample for each replaced pod
	Paths     []Stats `json:"paths"`
	// Delay is the recommended preStop delay: the longest tail plus the margin, rounded
	// up to whole seconds; Grace the grace period it needs: Delay plus the drain time.
	Delay Seconds `json:"recommended_delay_seconds"`
	Grace Seconds `json:"recommended_grace_period_seconds"`
	// Longest names the path whose tail decided.
	Longest string `json:"longest_path"`
	// Advice, when Grace exceeds what the user would accept (Options.AcceptGrace): what
	// shortens the deciding path's tail.
	Advice string `json:"advice,omitempty"`
	// Adaptive is the recommended adaptive wait, beside the fixed Delay.
	Adaptive AdaptiveWait `json:"adaptive_wait"`
	// Stored is what napctl calibrate --save keeps: each measured path's tails and the
	// delay it needs.
	Stored traffic.Calibration `json:"-"`
}

// AdaptiveWait is a recommended adaptive wait (napctl inject --wait adaptive; see
// docs/adaptive.md): it holds at least Min, until the pod's new connections have
// stopped for Quiet, at most Max; Grace is Max plus the drain time.
//
// MIN is the fixed delay: every measured path's tail is covered whatever the traffic
// is like. Where a pod gets fewer new connections than one per Quiet, the wait cannot
// tell a route that forgot it from one that has not sent yet, and ends after QUIET (on
// the lab at 2 req/s over 4 pods, behind a load balancer with NLB timings: 12 of 128
// requests lost with no MIN; docs/adaptive.md). QUIET is nap's default. MAX is twice
// the fixed delay, at least nap's default MAX: room for a path slower than any measured
// (a load balancer added later), which a pod whose traffic goes on waits out.
type AdaptiveWait struct {
	Min   Seconds `json:"min_seconds"`
	Quiet Seconds `json:"quiet_seconds"`
	Max   Seconds `json:"max_seconds"`
	Grace Seconds `json:"grace_period_seconds"`
}

// Wait is a as nap's adaptive wait.
func (a AdaptiveWait) Wait() wait.Wait {
	w := wait.DefaultAdaptive()
	w.Min, w.Quiet, w.Delay = a.Min.Duration(), a.Quiet.Duration(), a.Max.Duration()
	return w
}

// Seconds is a duration that the report's JSON writes as a number of seconds, as its
// fields' names say (_seconds), and that Go code and the text report read as a
// time.Duration.
type Seconds time.Duration

// Duration is s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) }

func (s Seconds) String() string { return time.Duration(s).String() }

// MarshalJSON writes s in seconds.
func (s Seconds) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(s).Seconds()) }

// UnmarshalJSON reads a number of seconds.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*s = Seconds(f * float64(time.Second))
	return nil
}
