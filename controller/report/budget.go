package report

import (
	"time"

	"golang.org/x/time/rate"
)

// The Reporter's events are paced across every namespace: a change that many
// workloads feel at once (a learned raise or a calibration of a route they share, the
// first report of a fleet) must not become a thousand events in a second. client-go's
// event broadcaster queues at most 1,000 events and drops the rest, and each one is a
// write to the API server. Past the burst, a namespace's new findings of its workloads'
// own wait for their turn: tokens are reserved for them in the order their namespaces
// asked, and the namespace is synced again when they are due, so every such finding is
// told once, late rather than lost. At the default pace 1,000 workloads are all told
// within about 3.5 minutes, and no minute holds more than DefaultEventBurst + 60 ×
// DefaultEventRate events (400), far inside the broadcaster's queue. A path's findings
// (reasons), which one change of a route gives every workload it reaches, take only
// the tokens spare after those and are never booked: at 10,000 workloads on one raised
// route, told one by one at this pace, the events would take 33 minutes and hold every
// other workload's finding behind them (docs/controller-scale.md).
const (
	// DefaultEventRate is the events per second the Reporter writes past its burst.
	DefaultEventRate = 5
	// DefaultEventBurst is how many it writes at once.
	DefaultEventBurst = 100
)

// eventBudget paces the Reporter's events (see DefaultEventRate). Its zero value is
// not ready: newEventBudget.
type eventBudget struct {
	limiter *rate.Limiter
	now     func() time.Time
}

func newEventBudget(perSecond float64, burst int, now func() time.Time) *eventBudget {
	if perSecond <= 0 {
		perSecond = DefaultEventRate
	}
	if burst <= 0 {
		burst = DefaultEventBurst
	}
	if now == nil {
		now = time.Now
	}
	return &eventBudget{limiter: rate.NewLimiter(rate.Limit(perSecond), burst), now: now}
}

// take spends a token for an event now, when one is free.
func (b *eventBudget) take() bool { return b.limiter.AllowN(b.now(), 1) }

// reserve books n tokens (at most a burst) for events that must wait, and says when
// they are due: the caller keeps them (nsState.prepaid) and spends them then.
func (b *eventBudget) reserve(n int) (int, time.Time) {
	n = min(n, b.limiter.Burst())
	now := b.now()
	r := b.limiter.ReserveN(now, n)
	if !r.OK() { // not reached: n is at most a burst
		return 0, now
	}
	return n, now.Add(r.DelayFrom(now))
}
