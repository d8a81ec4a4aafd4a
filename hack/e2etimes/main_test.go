package main

import (
	"os"
	"strings"
	"testing"
)

// summarize on what `go test -json` wrote for a package of two tests, the second of
// which logs, runs a subtest and fails (testdata/fail.json): the failed test's whole
// output, the other's end alone, the tests by time; a failure. A stream without a test
// (a build failure's words) is a failure too, its words passed on.
func TestSummarize(t *testing.T) {
	f, err := os.Open("testdata/fail.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	failed, err := summarize(f, &b)
	got := b.String()
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v: want a failure", failed, err)
	}
	for _, want := range []string{"--- PASS: TestA", "x_test.go:4: hi\n", "x_test.go:4: boom\n", "--- FAIL: TestB", "FAIL\tx\t", "pass  TestA\n", "fail  TestB\n", "(2 tests;", "s  the package, start to end\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "  fail  \n") || strings.Contains(got, "  pass  \n") {
		t.Errorf("the package's end counted as a test in:\n%s", got)
	}
	if strings.Contains(got, "=== RUN   TestA") {
		t.Errorf("a passing test's output in:\n%s", got)
	}

	b.Reset()
	failed, err = summarize(strings.NewReader("# x\n./x.go:1:1: expected 'package'\nFAIL\tx [setup failed]\n"), &b)
	if err != nil || !failed || !strings.Contains(b.String(), "expected 'package'") || !strings.Contains(b.String(), "no test ran") {
		t.Errorf("a build failure: failed %v, err %v, %q", failed, err, b.String())
	}
}
