package controller

import "testing"

// The controller's Go memory limit: 90% of its container's, unless GOMEMLIMIT decides
// or the container has none.
func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		gomemlimit, container string
		want                  int64
		ok                    bool
	}{
		{"", "268435456", 241591905, true}, // 256 MiB: 230.4 MiB
		{"", "1073741824", 966367638, true},
		{"200MiB", "268435456", 0, false},
		{"", "", 0, false},
		{"", "soon", 0, false},
		{"", "0", 0, false},
		{"", "67431743488000", 0, false}, // no limit: the node's memory
	} {
		got, ok := memoryLimit(c.gomemlimit, c.container)
		if got != c.want || ok != c.ok {
			t.Errorf("GOMEMLIMIT %q, container %q: %d %v, want %d %v", c.gomemlimit, c.container, got, ok, c.want, c.ok)
		}
	}
}
