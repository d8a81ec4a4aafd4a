package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Only the manager's report of the Lease we released on stop is demoted to info; every
// other error stays an error, also through loggers derived with names and values.
func TestQuietReleasedLease(t *testing.T) {
	lost := errors.New(lostLeaseErr)
	demoted := map[string]any{"level": "info", "reason": releasedReason, "error": lostLeaseErr}
	for _, tc := range []struct {
		name string
		log  func(logr.Logger)
		want map[string]any // fields of the one JSON line written
	}{
		{name: "released lease on stop", want: demoted,
			log: func(l logr.Logger) { l.Error(lost, afterStopMsg) }},
		{name: "through WithName and WithValues",
			want: map[string]any{"level": "info", "reason": releasedReason, "logger": "manager", "k": "v"},
			log:  func(l logr.Logger) { l.WithName("manager").WithValues("k", "v").Error(lost, afterStopMsg) }},
		{name: "another error after stop", want: map[string]any{"level": "error", "error": "failed to start caches"},
			log: func(l logr.Logger) { l.Error(errors.New("failed to start caches"), afterStopMsg) }},
		{name: "a wrapped lease loss", want: map[string]any{"level": "error"},
			log: func(l logr.Logger) { l.Error(errors.New("x: "+lostLeaseErr), afterStopMsg) }},
		{name: "lease lost, another message", want: map[string]any{"level": "error", "logger": "manager"},
			log: func(l logr.Logger) { l.WithName("manager").Error(lost, "problem running manager") }},
		{name: "nil error", want: map[string]any{"level": "error"},
			log: func(l logr.Logger) { l.Error(nil, afterStopMsg) }},
		{name: "info untouched", want: map[string]any{"level": "info", "msg": "Starting workers"},
			log: func(l logr.Logger) { l.Info("Starting workers") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(quietReleasedLease(zap.New(zap.WriteTo(&buf), zap.JSONEncoder())))
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("not one JSON line: %v\n%s", err, buf.String())
			}
			for k, v := range tc.want {
				if line[k] != v {
					t.Errorf("%s = %v, want %v in %s", k, line[k], v, buf.String())
				}
			}
		})
	}
}
