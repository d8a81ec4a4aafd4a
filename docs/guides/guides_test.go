package guides

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	date     = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
	testName = regexp.MustCompile(`\bTest[A-Z]\w*`)
	link     = regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
)

// TestGuides: each guide has no date, no test name, and no link to a file that is not
// there.
func TestGuides(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no guides: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := date.FindString(line); m != "" {
				t.Errorf("%s:%d: a date (%s): a guide's figures link to the lab's rows, which carry theirs", f, i+1, m)
			}
			if m := testName.FindString(line); m != "" {
				t.Errorf("%s:%d: a test's name (%s): say what it shows, and link to the lab", f, i+1, m)
			}
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") {
					continue
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
					t.Errorf("%s:%d: a link to %s, which is not there", f, i+1, target)
				}
			}
		}
	}
}

// TestRuleCatchesDates: the rule finds what it is for.
func TestRuleCatchesDates(t *testing.T) {
	for line, want := range map[string]bool{
		"measured 2026-11-28 on the lab": true, "TestPooledLoadBalancer shows it": true,
		"a 10 s delay": false, "Testing it": false,
	} {
		if got := date.MatchString(line) || testName.MatchString(line); got != want {
			t.Errorf("%q: caught %v, want %v", line, got, want)
		}
	}
}
