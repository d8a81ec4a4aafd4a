package traffic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The stored calibration's shape: a JSON document that names its version, so that what
// an older napctl stored is read as it was written, or refused by name.
const (
	CalibrationAPIVersion = "calibrate.nap.dev/v1"
	CalibrationKind       = "Calibration"
)

// Calibration is what napctl calibrate measured, per path: the document it stores
// (--save) and that napctl lint --calibration reads, to tell each workload the delay its
// own paths need. docs/calibrate.md describes its fields.
type Calibration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Measured is when the calibration ended.
	Measured time.Time `json:"measured"`
	// Namespace is where it ran; Rounds how many rounds it made.
	Namespace string `json:"namespace,omitempty"`
	Rounds    int    `json:"rounds"`
	// MarginS is what a path's delay adds to its longest tail (then rounded up to whole
	// seconds).
	MarginS float64 `json:"margin_seconds"`
	// Paths are the measured paths, in All's order.
	Paths []PathTail `json:"paths"`
}

// PathTail is one path's tails: how long after a pod's termination began that path still
// sent it requests, over the calibration's samples.
type PathTail struct {
	Name    string  `json:"name"` // Path.Name
	Samples int     `json:"samples"`
	P50     float64 `json:"p50_seconds"`
	P99     float64 `json:"p99_seconds"`
	Max     float64 `json:"max_seconds"`
	// DelayS is the delay the path needs: Max plus the margin, rounded up to whole
	// seconds (DelayFor).
	DelayS float64 `json:"delay_seconds"`
	// Parameters are what the path's tail depends on, as calibrate set them (a load
	// balancer's annotations: its health checks).
	Parameters map[string]string `json:"parameters,omitempty"`
}

// DelayFor is the delay a path with this longest tail needs: the tail plus margin,
// rounded up to whole seconds. napctl calibrate's recommendation is DelayFor its
// slowest path.
func DelayFor(tail, margin time.Duration) time.Duration {
	return time.Duration(math.Ceil((tail + margin).Seconds())) * time.Second
}

// Needs is the delay that the slowest of paths needs by c, and that path's name; ok is
// false when c measured none of them (the fleet's delay then holds).
func (c *Calibration) Needs(paths []Path) (delay time.Duration, path string, ok bool) {
	for _, p := range paths {
		t, found := c.Tail(p.Name)
		if !found || t.Samples == 0 {
			continue
		}
		if d := time.Duration(t.DelayS * float64(time.Second)); !ok || d > delay {
			delay, path, ok = d, p.Name, true
		}
	}
	return delay, path, ok
}

// PodNeeds is the delay that the slowest measured path reaching a pod needs: the paths
// of the Services that select it (Reaching; ingressed tells whether an Ingress names a
// Service), why (that path, its Service and its measured tail, for people) and what
// shortens that path's tail; ok is false when c measured none of them.
func (c *Calibration) PodNeeds(svcs []*corev1.Service, ingressed func(service string) bool) (need time.Duration, why, remedy string, ok bool) {
	var paths []Path
	via := map[string]string{} // path → the first Service it reaches the pod through
	for _, svc := range svcs {
		for _, p := range Reaching(svc, ingressed(svc.Name)) {
			if _, seen := via[p.Name]; !seen {
				via[p.Name] = svc.Name
				paths = append(paths, p)
			}
		}
	}
	need, slowest, ok := c.Needs(paths)
	if !ok {
		return 0, "", "", false
	}
	p, _ := Lookup(slowest)
	tail, _ := c.Tail(slowest)
	why = fmt.Sprintf("Service %s reaches the pod through the %s, whose tail napctl calibrate measured at %.1f s (the longest of %d samples, %s)",
		via[slowest], p.Title, tail.Max, tail.Samples, c.Measured.Format("2006-01-02"))
	return need, why, p.Remedy, true
}

// Tail is the measured tail of the path named name.
func (c *Calibration) Tail(name string) (PathTail, bool) {
	i := slices.IndexFunc(c.Paths, func(t PathTail) bool { return t.Name == name })
	if i < 0 {
		return PathTail{}, false
	}
	return c.Paths[i], true
}

// ReadCalibration reads a stored calibration; name (a file's) names it in errors.
func ReadCalibration(r io.Reader, name string) (*Calibration, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var c Calibration
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: not a calibration (napctl calibrate --save): %v", name, err)
	}
	if c.APIVersion != CalibrationAPIVersion || c.Kind != CalibrationKind {
		return nil, fmt.Errorf("%s: apiVersion %q, kind %q: want %q, %q (napctl calibrate --save)", name, c.APIVersion, c.Kind, CalibrationAPIVersion, CalibrationKind)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}

func (c *Calibration) validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, t := range c.Paths {
		if _, ok := Lookup(t.Name); !ok {
			var names []string
			for _, p := range All() {
				names = append(names, p.Name)
			}
			errs = append(errs, fmt.Errorf("paths[%d]: path %q: want one of %s", i, t.Name, strings.Join(names, ", ")))
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("paths[%d]: path %q twice", i, t.Name))
		}
		seen[t.Name] = true
		if t.Samples < 0 || t.P50 < 0 || t.P99 < 0 || t.Max < 0 || t.DelayS < 0 || t.DelayS < t.Max {
			errs = append(errs, fmt.Errorf("paths[%d] (%s): negative figures, or a delay below the longest tail", i, t.Name))
		}
	}
	if c.MarginS < 0 {
		errs = append(errs, errors.New("margin_seconds is negative"))
	}
	return errors.Join(errs...)
}
