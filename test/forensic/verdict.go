package forensic

import "time"

// Verdict is an explanation of a loss, and whose it was.
type Verdict struct {
	Why   string
	Cause Cause
}

// Cause is whose a loss was, by the records.
type Cause string

const (
	Unexplained Cause = ""
	PodExit     Cause = "a pod's exit" // a pod left while a route still sent to it: the hold's
	IngressOwn  Cause = "the ingress"  // the ingress lost it itself: not the hold's
)

// whileWaiting says whether a proxy's record that began at at can be of a request sent
// at sent that failed after took: it began while the client waited (100 ms either side
// for the two clocks' reading).
func whileWaiting(at, sent time.Time, took time.Duration) bool {
	return !at.Before(sent.Add(-100*time.Millisecond)) && !at.After(sent.Add(took+100*time.Millisecond))
}
