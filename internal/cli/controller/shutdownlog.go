package controller

import "github.com/go-logr/logr"

// controller-runtime (up to v0.23 at least: kubernetes-sigs/controller-runtime#3535)
// logs a graceful stop with LeaderElectionReleaseOnCancel, some of the time, as
//
//	error received after stop sequence was engaged  error="leader election lost"
//
// client-go calls OnStoppedLeading whenever the elector ends, also when we released
// the Lease ourselves, and the manager reports that as a loss if its stop procedure
// is still reading errors. An error line on some rollouts of the controller would page
// people for nothing, so that one line is logged at info. A real loss while running
// is not this message: Start returns it and napctl exits non-zero.
const (
	afterStopMsg = "error received after stop sequence was engaged"
	lostLeaseErr = "leader election lost"

	releasedReason = "the Lease was released on stop"
)

// shutdownLogSink passes everything to its sink, except the line above, at info.
type shutdownLogSink struct{ logr.LogSink }

func quietReleasedLease(l logr.Logger) logr.Logger {
	return logr.New(shutdownLogSink{l.GetSink()})
}

func (s shutdownLogSink) Init(info logr.RuntimeInfo) {
	info.CallDepth++ // this wrapper's own frame
	s.LogSink.Init(info)
}

func (s shutdownLogSink) Error(err error, msg string, kv ...any) {
	if msg == afterStopMsg && err != nil && err.Error() == lostLeaseErr {
		s.LogSink.Info(0, msg, append([]any{"reason", releasedReason, "error", lostLeaseErr}, kv...)...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s shutdownLogSink) WithValues(kv ...any) logr.LogSink {
	return shutdownLogSink{s.LogSink.WithValues(kv...)}
}

func (s shutdownLogSink) WithName(name string) logr.LogSink {
	return shutdownLogSink{s.LogSink.WithName(name)}
}
