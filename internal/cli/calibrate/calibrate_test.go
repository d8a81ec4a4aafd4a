package calibrate

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/calibrate"
)

// The text report gives both recommendations as the flags that apply them.
func TestText(t *testing.T) {
	o := calibrate.Options{Rounds: 1, Margin: 2 * time.Second, Drain: 30 * time.Second, Hold: 20 * time.Second}
	s := func(d time.Duration) calibrate.Seconds { return calibrate.Seconds(d) }
	r := &calibrate.Report{Delay: s(36 * time.Second), Grace: s(66 * time.Second), Longest: "lb-local",
		Paths:    []calibrate.Stats{{Path: calibrate.Path{Name: "lb-local", URL: "http://10.77.1.1/"}, Samples: 2, Max: 33.1}},
		Rounds:   []calibrate.Round{{Pod: "a", Disruption: calibrate.ScaleDown}},
		Adaptive: calibrate.AdaptiveWait{Min: s(36 * time.Second), Quiet: s(2 * time.Second), Max: s(72 * time.Second), Grace: s(102 * time.Second)}}
	var b bytes.Buffer
	text(&b, r, o)
	for _, want := range []string{
		"recommended preStop delay 36s (the longest tail, on lb-local, plus 2s), grace period 1m6s",
		"napctl inject --delay 36s --grace-extra 30s -f MANIFESTS",
		"or nap's adaptive wait: at least 36s (the fixed delay), then until no new connection for 2s, at most 1m12s (room for a slower path); grace period 1m42s",
		"napctl inject --wait adaptive --min 36s --quiet 2s --delay 1m12s --grace-extra 30s -f MANIFESTS",
		"napctl install --wait adaptive --min 36s --quiet 2s --max 1m12s",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
}
