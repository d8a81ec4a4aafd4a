package probe

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestMeasure: a session that lasts as long as its command plus the settle time, with
// the command's exit code, the events asked for at its end, and progress on the way.
func TestMeasure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	var began time.Time
	progress := 0
	m := Measurement{
		Options: Options{URL: srv.URL, Rate: 50, Timeout: time.Second, Modes: []Mode{New, Reuse}, Duration: time.Hour},
		During:  "sleep 1.2; exit 3", Settle: 300 * time.Millisecond, CommandOutput: io.Discard,
		Progress: func(time.Duration, Counts) { progress++ },
		Events: func(start time.Time) []Event {
			began = start
			return []Event{{Kind: "deleted", Pod: "web-1", Words: "deleted"}}
		},
		Watch: "deployment/web in namespace shop",
	}
	t0 := time.Now()
	s, err := Measure(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 1500*time.Millisecond || d > 10*time.Second {
		t.Errorf("the session took %v, want the command's 1.2 s and the 0.3 s settle (not the hour of Duration)", d)
	}
	if s.Command == nil || s.Command.ExitCode != 3 || s.Command.Command != m.During {
		t.Errorf("command %+v, want exit 3", s.Command)
	}
	if len(s.Events) != 1 || s.Watch != m.Watch || began.Before(t0) {
		t.Errorf("events %+v, watch %q, start %v", s.Events, s.Watch, began)
	}
	if s.Total.Requests < 40 || s.Total.Failed != 0 || progress == 0 {
		t.Errorf("%d requests, %d failed, %d progress calls", s.Total.Requests, s.Total.Failed, progress)
	}
	if _, err := Measure(context.Background(), Measurement{Options: Options{URL: "not a url", Rate: 1}}); err == nil {
		t.Error("Measure took options that do not validate")
	}
}
