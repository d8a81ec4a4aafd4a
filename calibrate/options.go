package calibrate

import (
	"cmp"
	"errors"
	"time"
)

// Options configure Run.
type Options struct {
	Namespace string // default nap-calibrate
	// UseExisting lets Run work in a namespace it did not create; it then deletes only
	// its own objects there, not the namespace.
	UseExisting bool
	Image       string        // the napctl image, which runs napctl serve
	Replicas    int32         // default 3
	Rounds      int           // rolling restarts, one after another, each replacing every pod; default 5
	Rate        float64       // requests per second on each path; default 50
	Hold        time.Duration // the preStop hold that keeps a deleted pod serving; default 60s
	// Quiet is how long no request may reach a deleted pod, once no EndpointSlice has
	// it ready, before its tail is taken as final; default 10s.
	Quiet time.Duration
	// Paths says which traffic paths to measure (Enabled) and how to reach them:
	// the ClusterIP always, the NodePort unless NodeAddress is "-", the ingress with a
	// class and URL (its controller answers for /nap-calibrate).
	Paths  PathConfig
	Margin time.Duration // added to the longest tail; default 2s
	Drain  time.Duration // the grace period beyond the delay; default 30s
	// AcceptGrace is the longest grace period the user would accept: a recommendation
	// beyond it comes with what to do about the path whose tail decided; default 60s.
	AcceptGrace time.Duration
	Log         func(format string, args ...any)
}

// The defaults of Options, which napctl calibrate's flags show.
const (
	DefaultNamespace = Name
	DefaultReplicas  = 3
	DefaultRounds    = 5
	DefaultRate      = 50.0
	DefaultHold      = 60 * time.Second
	DefaultQuiet     = 10 * time.Second
	DefaultMargin    = 2 * time.Second
	DefaultDrain     = 30 * time.Second
	DefaultAccept    = 60 * time.Second
)

func (o *Options) defaults() {
	o.Namespace = cmp.Or(o.Namespace, DefaultNamespace)
	o.Replicas = cmp.Or(o.Replicas, DefaultReplicas)
	o.Rounds = cmp.Or(o.Rounds, DefaultRounds)
	o.Rate = cmp.Or(o.Rate, DefaultRate)
	o.Hold = cmp.Or(o.Hold, DefaultHold)
	o.Quiet = cmp.Or(o.Quiet, DefaultQuiet)
	o.Margin = cmp.Or(o.Margin, DefaultMargin)
	o.Drain = cmp.Or(o.Drain, DefaultDrain)
	o.AcceptGrace = cmp.Or(o.AcceptGrace, DefaultAccept)
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// Validate names the option that is off.
func (o Options) Validate() error {
	switch {
	case o.Image == "":
		return errors.New("the napctl image is required (it runs napctl serve)")
	case o.Paths.Validate() != nil:
		return o.Paths.Validate()
	case o.Rounds < 0 || o.Replicas < 0 || o.Rate < 0 || o.Hold < 0 || o.Quiet < 0 || o.Margin < 0 || o.Drain < 0 || o.AcceptGrace < 0:
		return errors.New("rounds, replicas, rate and durations must not be negative")
	case o.Replicas == 1:
		return errors.New("replicas 1: a deleted pod would leave nothing to serve")
	}
	return nil
}
