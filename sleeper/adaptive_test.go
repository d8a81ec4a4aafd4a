package sleeper

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// snmpText is /proc/net/snmp as Linux writes it, with passive connections opened.
func snmpText(passive int) string {
	return "Ip: Forwarding DefaultTTL InReceives\nIp: 1 64 4727426\n" +
		"IcmpMsg: InType3 OutType3\nIcmpMsg: 97 87\n" +
		"Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n" +
		fmt.Sprintf("Tcp: 1 200 120000 -1 200703 %d 3771 12011 181 3901186 3958667 3647 0 13256 0\n", passive) +
		"Udp: InDatagrams NoPorts\nUdp: 571 0\n"
}

// step is what the kernel's table says from a moment of the run on: the text of
// /proc/net/snmp, or none (gone).
type step struct {
	at   time.Duration
	text string
	gone bool
}

// traffic is a table whose count rises by by every every from 0 to until (its
// connections), then stays.
func traffic(every, until time.Duration, by int) []step {
	var s []step
	n := 100
	for at := time.Duration(0); at <= until; at += every {
		s = append(s, step{at: at, text: snmpText(n)})
		n += by
	}
	return s
}

// adaptiveCases: the wait against a synthetic /proc/net/snmp, which the test rewrites as
// the run goes (each implementation runs chrooted beside its own copy, and a
// /dev/termination-log that holds a line of the app's). sleep is when the run must end
// (within the implementation's slack, never before). verdict is the kind of the line it
// must append (none: nothing appended), end its End exactly when set, final its Total
// plus Conns (the last reading's count) when not negative; its Total is a count the
// table held (the program starts a little after the table's clock). live is the file at
// nap.LivePath (none when nil), wait the verdict's Wait.
var adaptiveCases = []struct {
	name    string
	args    []string
	table   []step
	signal  syscall.Signal
	after   time.Duration
	code    int
	stderr  string
	sleep   time.Duration
	verdict string
	end     time.Duration
	final   int
	live    *string
	wait    string
}{
	{name: "quiet from the start", args: []string{"--quiet", "300ms", "--max", "5s"},
		table: []step{{text: snmpText(12)}}, sleep: 300 * time.Millisecond, verdict: nap.Quiet, end: 300 * time.Millisecond, final: 12},
	{name: "MIN first", args: []string{"1s", "--quiet", "200ms", "--max", "5s"},
		table: []step{{text: snmpText(12)}}, sleep: time.Second, verdict: nap.Quiet, end: time.Second, final: 12},
	// The last connection at 1.5 s, QUIET 500 ms: 2 s, less up to a reading, as the
	// program may start (and read) up to that much after the table's clock.
	{name: "traffic, then quiet", args: []string{"--quiet", "500ms", "--max", "6s"},
		table: traffic(50*time.Millisecond, 1500*time.Millisecond, 5), sleep: 2*time.Second - nap.PollInterval, verdict: nap.Quiet, final: 250},
	{name: "background within ALLOW", args: []string{"--quiet", "500ms", "--max", "6s", "--allow", "4"},
		table: traffic(200*time.Millisecond, 6*time.Second, 1), sleep: 500 * time.Millisecond, verdict: nap.Quiet, final: -1},
	{name: "background above ALLOW holds to MAX", args: []string{"--quiet", "500ms", "--max", "2s", "--allow", "1"},
		table: traffic(100*time.Millisecond, 6*time.Second, 1), sleep: 2 * time.Second, verdict: nap.Late, end: 2 * time.Second, final: -1},
	{name: "MAX under MIN: MIN", args: []string{"1.5s", "--max", "300ms"},
		table: traffic(50*time.Millisecond, 6*time.Second, 1), sleep: 1500 * time.Millisecond, verdict: nap.Late, end: 1500 * time.Millisecond, final: -1},
	{name: "a count that goes back is traffic", args: []string{"--quiet", "300ms", "--max", "1500ms"},
		table: traffic(100*time.Millisecond, 6*time.Second, -1), sleep: 1500 * time.Millisecond, verdict: nap.Late, end: 1500 * time.Millisecond, final: -1},
	{name: "MAX not a multiple of the readings", args: []string{"--quiet", "5s", "--max", "1250ms"},
		table: []step{{text: snmpText(3)}}, sleep: 1250 * time.Millisecond, verdict: nap.Quiet, end: 1250 * time.Millisecond, final: 3},
	{name: "no table: MAX, exit 3", args: []string{"--quiet", "100ms", "--max", "800ms"},
		table: []step{{gone: true}}, code: nap.ExitUnreadable, stderr: nap.Unreadable, sleep: 800 * time.Millisecond, verdict: nap.Blind, end: 800 * time.Millisecond},
	{name: "table gone later: MAX, exit 3", args: []string{"--quiet", "5s", "--max", "1200ms"},
		table: []step{{text: snmpText(7)}, {at: 300 * time.Millisecond, gone: true}}, code: nap.ExitUnreadable, stderr: nap.Unreadable, sleep: 1200 * time.Millisecond, verdict: nap.Blind, end: 1200 * time.Millisecond},
	{name: "no TCP line: MAX, exit 3", args: []string{"--max", "700ms"},
		table: []step{{text: "Ip: 1 2 3\nUdp: 1 2 3 4 5 6\n"}}, code: nap.ExitUnreadable, stderr: nap.Unreadable, sleep: 700 * time.Millisecond, verdict: nap.Blind, end: 700 * time.Millisecond},
	{name: "SIGTERM ends it", args: []string{"--quiet", "10s", "--max", "20s"}, table: traffic(50*time.Millisecond, 6*time.Second, 1),
		signal: syscall.SIGTERM, after: 400 * time.Millisecond, code: 143, verdict: nap.Cut},
	{name: "inf wins", args: []string{"inf", "--quiet", "100ms"}, table: []step{{text: snmpText(1)}},
		signal: syscall.SIGINT, after: 700 * time.Millisecond, code: 130},
	// A fixed delay observes too, and ends at the delay whatever it sees, with the
	// defaults' QUIET (2 s) for its verdict.
	{name: "fixed: quiet", args: []string{"1.25"}, table: []step{{text: snmpText(40)}},
		sleep: 1250 * time.Millisecond, verdict: nap.Quiet, end: 1250 * time.Millisecond, final: 40},
	{name: "fixed: traffic to the end is late", args: []string{"1s"}, table: traffic(50*time.Millisecond, 6*time.Second, 2),
		sleep: time.Second, verdict: nap.Late, end: time.Second, final: -1},
	{name: "fixed: traffic, then 2.5 s quiet", args: []string{"3s"}, table: traffic(50*time.Millisecond, 500*time.Millisecond, 3),
		sleep: 3 * time.Second, verdict: nap.Quiet, end: 3 * time.Second, final: 130},
	// Its --allow is the probes' background: up to it, connections are not traffic.
	{name: "fixed: the background within ALLOW is quiet", args: []string{"1500ms", "--allow", "2"}, table: traffic(700*time.Millisecond, 6*time.Second, 1),
		sleep: 1500 * time.Millisecond, verdict: nap.Quiet, end: 1500 * time.Millisecond, final: -1},
	// ALLOW is per QUIET: a probe every second (ALLOW 3, floor(2 s/1 s)+1) for a delay
	// of 5.5 s opens 6 connections, each QUIET of it 3 at most: quiet. (Before the
	// baseline moved each QUIET, the fourth read as traffic, and a probed pod's delay
	// longer than QUIET read late.)
	{name: "fixed: a probe's background over a delay past QUIET is quiet", args: []string{"5500ms", "--allow", "3"}, table: traffic(time.Second, 8*time.Second, 1),
		sleep: 5500 * time.Millisecond, verdict: nap.Quiet, end: 5500 * time.Millisecond, final: -1},
	{name: "adaptive: a probe's background does not hold MIN's wait", args: []string{"4s", "--quiet", "2s", "--max", "20s", "--allow", "3"}, table: traffic(time.Second, 30*time.Second, 1),
		sleep: 4 * time.Second, verdict: nap.Quiet, end: 4 * time.Second, final: -1},
	{name: "fixed: above ALLOW is late", args: []string{"--allow", "2", "1500ms"}, table: traffic(100*time.Millisecond, 6*time.Second, 1),
		sleep: 1500 * time.Millisecond, verdict: nap.Late, end: 1500 * time.Millisecond, final: -1},
	{name: "fixed: no table is blind, and silent", args: []string{"700ms"}, table: []step{{gone: true}},
		sleep: 700 * time.Millisecond, verdict: nap.Blind, end: 700 * time.Millisecond},
	{name: "fixed: SIGTERM leaves it cut", args: []string{"20"}, table: []step{{text: snmpText(1)}},
		signal: syscall.SIGTERM, after: 400 * time.Millisecond, code: 143, verdict: nap.Cut},
	// --live: the wait at nap.LivePath when the hook starts, the arguments its floor.
	{name: "live: none there, the arguments", args: []string{"1s", "--live"}, table: []step{{text: snmpText(5)}},
		stderr: nap.LiveMissing, sleep: time.Second, verdict: nap.Quiet, end: time.Second, final: 5, wait: nap.WaitArgs},
	{name: "live: a fixed delay becomes the live adaptive wait", args: []string{"500ms", "--live"}, live: ptr("wait/v1 0 500 6000 0\n"),
		table: traffic(50*time.Millisecond, 1500*time.Millisecond, 5), sleep: 2*time.Second - nap.PollInterval, verdict: nap.Quiet, final: 250, wait: nap.WaitLive},
	{name: "live: its MIN raises the arguments'", args: []string{"--live", "--quiet", "200ms", "--max", "5s"}, live: ptr("wait/v1 1200 0 0 0"),
		table: []step{{text: snmpText(12)}}, sleep: 1200 * time.Millisecond, verdict: nap.Quiet, end: 1200 * time.Millisecond, final: 12, wait: nap.WaitLive},
	{name: "live: its MAX too, traffic to the end", args: []string{"--quiet", "300ms", "--max", "500ms", "--live"}, live: ptr("wait/v1 0 0 1500 0\n"),
		table: traffic(100*time.Millisecond, 6*time.Second, 1), sleep: 1500 * time.Millisecond, verdict: nap.Late, end: 1500 * time.Millisecond, final: -1, wait: nap.WaitLive},
	{name: "live: shorter than the arguments, the arguments", args: []string{"1500ms", "--live"}, live: ptr("wait/v1 300 100 0 0\n"),
		table: []step{{text: snmpText(9)}}, sleep: 1500 * time.Millisecond, verdict: nap.Quiet, end: 1500 * time.Millisecond, final: 9, wait: nap.WaitLive},
	{name: "live: the arguments' ALLOW", args: []string{"--quiet", "500ms", "--max", "6s", "--allow", "4", "--live"}, live: ptr("wait/v1 0 0 0 0\n"),
		table: traffic(200*time.Millisecond, 6*time.Second, 1), sleep: 500 * time.Millisecond, verdict: nap.Quiet, final: -1, wait: nap.WaitLive},
	{name: "live: three fields, the arguments", args: []string{"700ms", "--live"}, live: ptr("wait/v1 5000 2000 9000\n"),
		table: []step{{text: snmpText(3)}}, stderr: nap.LiveMissing, sleep: 700 * time.Millisecond, verdict: nap.Quiet, end: 700 * time.Millisecond, final: 3, wait: nap.WaitArgs},
	{name: "live: ten digits, the arguments", args: []string{"--live", "600ms"}, live: ptr("wait/v1 1000000000 0 0 0\n"),
		table: []step{{text: snmpText(3)}}, stderr: nap.LiveMissing, sleep: 600 * time.Millisecond, verdict: nap.Quiet, end: 600 * time.Millisecond, final: 3, wait: nap.WaitArgs},
	{name: "live: empty, the arguments", args: []string{"--live", "600ms"}, live: ptr(""),
		table: []step{{text: snmpText(3)}}, stderr: nap.LiveMissing, sleep: 600 * time.Millisecond, verdict: nap.Quiet, end: 600 * time.Millisecond, final: 3, wait: nap.WaitArgs},
	{name: "live: blind, and where its wait came from", args: []string{"--max", "500ms", "--live"}, live: ptr("wait/v1 0 0 900 0\n"),
		table: []step{{gone: true}}, code: nap.ExitUnreadable, stderr: nap.Unreadable, sleep: 900 * time.Millisecond, verdict: nap.Blind, end: 900 * time.Millisecond, wait: nap.WaitLive},
	{name: "live: inf reads none", args: []string{"--live", "inf"}, table: []step{{text: snmpText(1)}},
		signal: syscall.SIGINT, after: 700 * time.Millisecond, code: 130},
	{name: "live: none read after an invalid argument", args: []string{"--live", "2x"}, live: ptr("wait/v1 0 0 0 0\n"), table: []step{{text: snmpText(1)}},
		signal: syscall.SIGTERM, after: 400 * time.Millisecond, code: 143, stderr: nap.InvalidPrefix + "2x" + nap.InvalidSuffix, verdict: nap.Cut},
}

func ptr(s string) *string { return &s }

// appLine is what the app wrote to its termination message before nap ran: nap appends.
const appLine = "the app's own line\n"

// TestAdaptiveConformance runs every case on every implementation at once, each in a
// root of its own (chroot: the binary, qemu-user if needed, and proc/net/snmp, a regular
// file the test replaces at each step with a rename) and a network namespace of its own
// (the arm64 binary with qemu's stub handing it its netlink socket).
func TestAdaptiveConformance(t *testing.T) {
	testenv.RequireRoot(t)
	ims := impls(t)
	got := make([][]outcome, len(ims))
	lags := make([][]time.Duration, len(ims)) // how late the test wrote a step of the table, at worst
	logs := make([][]string, len(ims))        // each run's termination message
	var wg sync.WaitGroup
	for i, im := range ims {
		got[i] = make([]outcome, len(adaptiveCases))
		lags[i] = make([]time.Duration, len(adaptiveCases))
		logs[i] = make([]string, len(adaptiveCases))
		for j, tc := range adaptiveCases {
			root, inside := rootWith(t, im)
			dir := filepath.Join(root, "proc", "net")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			put := func(s step) {
				path := filepath.Join(dir, "snmp")
				if s.gone {
					os.Remove(path)
					return
				}
				tmp := path + ".new"
				if err := os.WriteFile(tmp, []byte(s.text), 0o444); err == nil {
					os.Rename(tmp, path)
				}
			}
			put(tc.table[0])
			if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.live != nil {
				if err := os.WriteFile(filepath.Join(root, nap.LivePath), []byte(*tc.live), 0o444); err != nil {
					t.Fatal(err)
				}
			}
			logs[i][j] = filepath.Join(root, nap.VerdictPath)
			if err := os.WriteFile(logs[i][j], []byte(appLine), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("chroot", append([]string{root}, append(inside, tc.args...)...)...)
			cmd.Dir = "/"
			wg.Go(func() {
				// An empty network namespace of its own: no socket there receives (the
				// request signal is TestRequestSignal's).
				err := inNetns(im, false, func(sockets *os.File) error {
					// The table's clock starts with the process (a little before it runs).
					start, stop, wrote := time.Now(), make(chan struct{}), make(chan struct{})
					go func() {
						defer close(wrote)
						for _, s := range tc.table[1:] {
							select {
							case <-stop:
								return
							case <-time.After(time.Until(start.Add(s.at))):
								put(s)
								lags[i][j] = max(lags[i][j], time.Since(start.Add(s.at)))
							}
						}
					}()
					got[i][j] = runWith(cmd, tc.signal, tc.after, im.qemu != "", sockets)
					close(stop)
					<-wrote
					return nil
				})
				if err != nil {
					got[i][j] = outcome{err: err}
				}
			})
		}
	}
	wg.Wait()
	for i, im := range ims {
		for j, tc := range adaptiveCases {
			t.Run(im.name+"/"+tc.name, func(t *testing.T) {
				got[i][j].checkWait(t, im, tc.code, tc.stderr, tc.sleep, tc.sleep, tc.signal != 0)
				checkVerdict(t, logs[i][j], got[i][j], tc.verdict, tc.end, tc.final, tc.table)
				checkWaitField(t, logs[i][j], tc.verdict, tc.wait)
				if t.Failed() { // the stimulus's side: a table written late is a quiet window nap saw
					t.Logf("the test wrote the table's steps at worst %v after their time", lags[i][j].Round(time.Millisecond))
				}
			})
		}
	}
}

// checkWait checks one run of an adaptive wait: no error, the exit status and stderr,
// nothing on stdout, and its end from lo to hi plus im's slack (with signalled, from
// the signal to the slack after it).
func (o outcome) checkWait(t *testing.T, im impl, code int, stderr string, lo, hi time.Duration, signalled bool) {
	t.Helper()
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.code != code || o.stdout != "" || o.stderr != stderr {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stderr %q", o.code, o.stdout, o.stderr, code, stderr)
	}
	hi += im.slack
	if signalled {
		lo, hi = o.after, o.after+im.slack
	}
	if o.elapsed < lo || o.elapsed > hi {
		t.Errorf("ended after %v, want %v to %v", o.elapsed, lo, hi)
	}
	t.Logf("ended after %v (%v to %v)", o.elapsed.Round(time.Millisecond), lo.Round(time.Millisecond), hi.Round(time.Millisecond))
}

// checkWaitField checks the Wait of the verdict at path, when it has one.
func checkWaitField(t *testing.T, path, kind, wait string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := nap.ParseVerdict(string(b)); ok && kind != nap.Cut && v.Wait != wait {
		t.Errorf("verdict %q: wait %q, want %q", b, v.Wait, wait)
	}
}

// checkVerdict checks the termination message a run left at path: the app's line, then
// the verdict of kind (none: nothing after the app's line); its End exactly end when set
// and never past the run's time, its Total plus Conns final when not negative, its Total
// a count of table.
func checkVerdict(t *testing.T, path string, o outcome, kind string, end time.Duration, final int, table []step) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := strings.CutPrefix(string(b), appLine)
	if !ok {
		t.Fatalf("termination message %q: the app's line is gone", b)
	}
	if kind == "" {
		if msg != "" {
			t.Errorf("appended %q, want nothing", msg)
		}
		return
	}
	v, ok := nap.ParseVerdict(msg)
	switch {
	case !ok:
		t.Fatalf("appended %q: not a verdict", msg)
	case v.String()+map[bool]string{true: "", false: "\n"}[kind == nap.Cut] != msg:
		t.Errorf("appended %q, want exactly one line, %q", msg, v.String())
	case v.Kind != kind:
		t.Errorf("verdict %q, want %s", msg, kind)
	case kind == nap.Cut:
	case end != 0 && v.End != end:
		t.Errorf("verdict %q: end %v, want %v", msg, v.End, end)
	case v.End > o.elapsed:
		t.Errorf("verdict %q: end %v, after the run's %v", msg, v.End, o.elapsed)
	case kind != nap.Blind && final >= 0 && v.Total+v.Conns != uint64(final):
		t.Errorf("verdict %q: total+conns %d, want %d", msg, v.Total+v.Conns, final)
	case kind != nap.Blind && !slices.ContainsFunc(table, func(s step) bool { n, _ := nap.PassiveOpens([]byte(s.text)); return n == v.Total }):
		t.Errorf("verdict %q: total %d, a count the table never held", msg, v.Total)
	}
	t.Logf("verdict %q", strings.TrimSuffix(msg, "\n"))
}
