package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/probe"
)

// vegeta is a load generator nobody here wrote (github.com/tsenart/vegeta, built from
// the Go module proxy by hack/tool-bins.sh), run beside napctl probe's engine on the
// rows that ask for it (scenario.vegeta): each request over a new connection, at the
// rate the prober sends over new connections (half of its rate: its new and kept
// connections take turns), the same 2 s timeout, from where the prober sends (node 1,
// or node 2's network namespace). Both count the same outage: their failures over new
// connections must agree (crossCheck).
type vegeta struct {
	cmd     *exec.Cmd
	results string
}

// vegetaMax bounds an attack whatever happens to the test: no measurement is this long.
const vegetaMax = 10 * time.Minute

// startVegeta attacks the prober's target at rate requests per second until stopped
// (at most vegetaMax); the target already answers (startProbe waited for it).
func startVegeta(t *testing.T, target vantage, rate float64) *vegeta {
	t.Helper()
	bin := testenv.Tool(t, "vegeta")
	v := &vegeta{results: filepath.Join(t.TempDir(), "results.bin")}
	args := []string{bin, "attack", fmt.Sprintf("-rate=%d/1s", int(math.Round(rate))), "-duration=" + vegetaMax.String(),
		"-keepalive=false", "-timeout=2s", "-redirects=-1", "-output=" + v.results}
	if target.node2 {
		args = append([]string{"nsenter", "--net=" + node2NetNS}, args...)
	}
	v.cmd = exec.Command(args[0], args[1:]...)
	req := "GET " + target.url + "\n"
	if target.host != "" {
		req += "Host: " + target.host + "\n"
	}
	v.cmd.Stdin = strings.NewReader(req)
	v.cmd.Stderr = os.Stderr
	if err := v.cmd.Start(); err != nil {
		t.Fatalf("vegeta attack: %v", err)
	}
	t.Cleanup(func() { v.cmd.Process.Kill() })
	return v
}

// vegetaReport is what `vegeta report -type=json` says, the part read here.
type vegetaReport struct {
	Requests    int            `json:"requests"`
	StatusCodes map[string]int `json:"status_codes"`
	Errors      []string       `json:"errors"`
}

func (r vegetaReport) failed() int { return r.Requests - r.StatusCodes["200"] }

// stop ends the attack (SIGINT: vegeta writes what it has and exits) and reads its
// report.
func (v *vegeta) stop(t *testing.T) vegetaReport {
	t.Helper()
	v.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- v.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		v.cmd.Process.Kill()
		t.Fatal("vegeta attack did not end 10 s after SIGINT")
	}
	out, err := exec.Command(testenv.Tool(t, "vegeta"), "report", "-type=json", v.results).Output()
	if err != nil {
		t.Fatalf("vegeta report: %v", err)
	}
	var r vegetaReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("vegeta report: %v\n%s", err, out)
	}
	return r
}

// crossCheck holds napctl probe's count of failures over new connections and vegeta's
// to each other. Each samples the same outage at the same rate, at its own instants,
// over about the same time (vegeta's count is scaled to the prober's requests: the one
// on node 2 is a process of its own, started and stopped a moment apart): the counts
// differ by chance, by about the square root of the count. Both see failures or both
// see none (within 3); beyond, they agree within 3 standard deviations of a count plus 3.
func crossCheck(t *testing.T, sc scenario, s probe.Summary, vg vegetaReport) {
	t.Helper()
	ours, total := 0, 0
	if c := s.Modes[probe.New]; c != nil {
		ours, total = c.Failed, c.Requests
	}
	theirs := vg.failed()
	t.Logf("%s: over new connections, napctl probe: %d of %d failed; vegeta: %d of %d failed (status %v, errors %q)",
		sc, ours, total, theirs, vg.Requests, vg.StatusCodes, vg.Errors)
	if vg.Requests < total/2 {
		t.Errorf("%s: vegeta sent %d requests, napctl probe %d over new connections: not the same load", sc, vg.Requests, total)
	}
	scaled := float64(theirs)
	if vg.Requests > 0 {
		scaled = float64(theirs) * float64(total) / float64(vg.Requests)
	}
	if bound := 3*math.Sqrt(math.Max(float64(ours), scaled)) + 3; math.Abs(float64(ours)-scaled) > bound {
		t.Errorf("%s: napctl probe counted %d failures over new connections, vegeta %d (%.0f over as many requests): more apart than chance (%.0f)",
			sc, ours, theirs, scaled, bound)
	}
}
