package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Only the manager's report of the Lease we released on stop is demoted to info; every
// other error stays an error, also through loggers derived with names and values.
func TestQuietReleasedLease(t *testing.T) {
	for _, tc := range []struct {
		name  string
		log   func(logr.Logger)
		level string
	}{
		{name: "released lease on stop", level: "info",
			log: func(l logr.Logger) { l.Error(errors.New(lostLeaseErr), afterStopMsg) }},
		{name: "through WithName and WithValues", level: "info",
			log: func(l logr.Logger) {
				l.WithName("manager").WithValues("k", "v").Error(errors.New(lostLeaseErr), afterStopMsg)
			}},
		{name: "another error after stop", level: "error",
			log: func(l logr.Logger) { l.Error(errors.New("failed to start caches"), afterStopMsg) }},
		{name: "a wrapped lease loss", level: "error",
			log: func(l logr.Logger) { l.Error(errors.New("x: "+lostLeaseErr), afterStopMsg) }},
		{name: "lease lost, another message", level: "error",
			log: func(l logr.Logger) { l.WithName("manager").Error(errors.New(lostLeaseErr), "problem running manager") }},
		{name: "nil error", level: "error",
			log: func(l logr.Logger) { l.Error(nil, afterStopMsg) }},
		{name: "info untouched", level: "info",
			log: func(l logr.Logger) { l.Info("Starting workers") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(quietReleasedLease(zap.New(zap.WriteTo(&buf), zap.JSONEncoder())))
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("not one JSON line: %v\n%s", err, buf.String())
			}
			if line["level"] != tc.level {
				t.Errorf("level %v, want %s: %s", line["level"], tc.level, strings.TrimSpace(buf.String()))
			}
			if tc.name == "through WithName and WithValues" && (line["logger"] != "manager" || line["k"] != "v") {
				t.Errorf("name or values lost: %s", buf.String())
			}
		})
	}
}
