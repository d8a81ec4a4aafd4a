package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestProbeCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("fail") != "" {
			w.WriteHeader(503)
		}
	}))
	defer srv.Close()
	plot := filepath.Join(t.TempDir(), "p.html")
	code, stdout, stderr := runNapctl("probe", srv.URL+"/", "--duration", "1s", "--rate", "50", "-o", "json", "--plot", plot)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var s struct {
		Total   struct{ Requests, Failed int }
		Buckets []json.RawMessage
		Outages []json.RawMessage
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if s.Total.Requests < 45 || s.Total.Failed != 0 || len(s.Buckets) != 10 || len(s.Outages) != 0 { // 1 s in 100 ms buckets
		t.Errorf("summary %+v", s)
	}
	if page, err := os.ReadFile(plot); err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("--plot: %v", err)
	}

	code, stdout, stderr = runNapctl("probe", srv.URL+"/?fail=1", "--during", "sleep 0.5; exit 3", "--settle", "200ms", "--rate", "40", "--max-failures", "1000")
	if code != 1 || !strings.Contains(stdout, "failed (5xx") || !strings.Contains(stdout, `command "sleep 0.5; exit 3" exited 3`) || !strings.Contains(stderr, "exited 3") {
		t.Errorf("--during: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// --list-failures: each failed request in the JSON, when it was due.
	before := time.Now()
	code, stdout, stderr = runNapctl("probe", srv.URL+"/?fail=1", "--duration", "300ms", "--rate", "40", "-o", "json", "--list-failures", "--max-failures", "1000")
	var listed struct {
		Total          struct{ Failed int }
		FailedRequests []struct {
			Due    time.Time
			Kind   string
			Status int
		} `json:"failed_requests"`
	}
	if err := json.Unmarshal([]byte(stdout), &listed); code != 0 || err != nil || listed.Total.Failed == 0 || len(listed.FailedRequests) != listed.Total.Failed {
		t.Errorf("--list-failures: exit %d, %v, %d failed, %d listed\n%s", code, err, listed.Total.Failed, len(listed.FailedRequests), stderr)
	}
	for _, f := range listed.FailedRequests {
		if f.Due.Before(before) || f.Due.After(time.Now()) || f.Kind != "5xx" || f.Status != 503 {
			t.Errorf("--list-failures: %+v, want a 503 due since %v", f, before)
			break
		}
	}
	code, _, stderr = runNapctl("probe", srv.URL+"/?fail=1", "--duration", "300ms", "--rate", "40")
	if code != 1 || !strings.Contains(stderr, "requests failed (--max-failures 0)") {
		t.Errorf("failures over --max-failures: exit %d, %s", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{args: []string{"probe"}, want: "accepts 1 arg"},
		{args: []string{"probe", "ftp://x"}, want: "want http"},
		{args: []string{"probe", srv.URL, "--conn", "udp"}, want: `--conn "udp"`},
		{args: []string{"probe", srv.URL, "--plot", "x.png"}, want: "--plot"},
		{args: []string{"probe", srv.URL, "--rate", "NaN"}, want: "--rate NaN: must be a positive number"},
		{args: []string{"probe", srv.URL, "--rate", "+Inf"}, want: "--rate +Inf"},
		{args: []string{"probe", srv.URL, "--rate", "0"}, want: "--rate 0"},
		{args: []string{"probe", srv.URL, "--rate", "-3"}, want: "--rate -3"},
		{args: []string{"probe", srv.URL, "--duration", "0s"}, want: "--duration 0s: must be positive"},
		{args: []string{"probe", srv.URL, "--duration", "-1s"}, want: "--duration -1s"},
		{args: []string{"probe", srv.URL, "--timeout", "0s"}, want: "--timeout 0s"},
		{args: []string{"probe", srv.URL, "--bucket", "-1s"}, want: "--bucket -1s"},
		{args: []string{"probe", srv.URL, "--settle", "-1s"}, want: "--settle -1s"},
		{args: []string{"probe", srv.URL, "--max-in-flight", "-1"}, want: "--max-in-flight -1"},
		{args: []string{"probe", srv.URL, "-n", "shop"}, want: "-n goes with --watch"},
		{args: []string{"probe", srv.URL, "--list-failures"}, want: "--list-failures goes with -o json"},
		{args: []string{"probe", srv.URL, "--streams", "2", "--host", "shop.example"}, want: `--host "shop.example": names the server of requests`},
		{args: []string{"probe", srv.URL, "--dns", "10.96.0.10"}, want: `--dns "10.96.0.10": want ADDR:PORT`},
		{args: []string{"probe", srv.URL, "--streams", "2", "--dns", "10.96.0.10:53"}, want: `--dns "10.96.0.10:53": resolves the names of requests`},
	} {
		// probe's 1 is its verdict (requests failed): its errors are 2.
		if code, stdout, stderr := runNapctl(c.args...); code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
	// A cluster that cannot be read: exit 2 before any request.
	missing := filepath.Join(t.TempDir(), "nope.kubeconfig")
	if code, stdout, stderr := runNapctl("probe", srv.URL, "--watch", "app=web", "--kubeconfig", missing); code != 2 || stdout != "" || !strings.Contains(stderr, "--watch") || !strings.Contains(stderr, missing) {
		t.Errorf("--watch without a cluster: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// Ctrl-C stops the probe and prints the report so far.
func TestProbeInterrupt(t *testing.T) {
	first := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { once.Do(func() { close(first) }) }))
	defer srv.Close()
	go func() {
		// The first request reaches the server after the command registered for SIGINT.
		<-first
		syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	start := time.Now()
	code, stdout, stderr := runNapctl("probe", srv.URL, "--duration", "30s", "--rate", "20")
	if took := time.Since(start); took > 5*time.Second || code != 0 || !strings.Contains(stdout, "requests in") {
		t.Errorf("after Ctrl-C: %v, exit %d\n%s%s", took, code, stdout, stderr)
	}
}
