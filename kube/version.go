package kube

import (
	"fmt"
	"strings"
)

// Version is a Kubernetes minor version.
type Version struct{ Major, Minor int }

// ParseVersion reads "1.30" (or "v1.30.2").
func ParseVersion(s string) (Version, error) {
	var v Version
	if _, err := fmt.Sscanf(strings.TrimPrefix(s, "v"), "%d.%d", &v.Major, &v.Minor); err != nil || v.Major < 1 {
		return v, fmt.Errorf("kube version %q: want MAJOR.MINOR, such as 1.30", s)
	}
	return v, nil
}

// Less tells whether v is older than o.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || v.Major == o.Major && v.Minor < o.Minor
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// The versions that the native sleep action needs.
var (
	NativeSleepSince     = Version{1, 30} // lifecycle.preStop.sleep
	NativeSleepZeroSince = Version{1, 33} // sleep.seconds: 0
)
