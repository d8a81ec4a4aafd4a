package memcg

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// allocEnv makes the test binary a process that touches that many bytes and exits.
const allocEnv = "MEMCG_TEST_ALLOC"

func TestMain(m *testing.M) {
	if s := os.Getenv(allocEnv); s != "" {
		n, _ := strconv.Atoi(s)
		b := make([]byte, n)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println(len(b))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A process within the limit runs and is counted; one beyond it is killed by the
// kernel, and the kill is counted.
func TestGroup(t *testing.T) {
	const limit = 64 << 20
	for _, c := range []struct {
		name   string
		alloc  int
		killed bool
	}{
		{"within", 16 << 20, false},
		{"beyond", 256 << 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := New(fmt.Sprintf("memcg-test-%d-%s", os.Getpid(), c.name), limit)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := g.Remove(); err != nil {
					t.Error(err)
				}
			}()
			cmd := g.Command(os.Args[0])
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", allocEnv, c.alloc))
			out, err := cmd.CombinedOutput()
			if (err != nil) != c.killed {
				t.Fatalf("touching %d bytes under a limit of %d: %v (want killed: %v)\n%s", c.alloc, limit, err, c.killed, out)
			}
			peak, err := g.Peak()
			if err != nil {
				t.Fatal(err)
			}
			kills, err := g.OOMKills()
			if err != nil {
				t.Fatal(err)
			}
			// A process the kernel is killing for the limit may charge past it: its
			// last faults are forced through (cgroup v1's try_charge lets an OOM
			// victim overcharge, seen: one 4 KiB page). At most one huge page over.
			most := int64(limit)
			if c.killed {
				most += 2 << 20
			}
			if peak < int64(min(c.alloc, limit))*3/4 || peak > most {
				t.Errorf("peak %d bytes, want about %d and at most %d (the limit %d)", peak, min(c.alloc, limit), most, limit)
			}
			if want := map[bool]int{false: 0, true: 1}[c.killed]; kills != want {
				t.Errorf("%d OOM kills, want %d", kills, want)
			}
		})
	}
}

func TestNewRefusesNoLimit(t *testing.T) {
	if _, err := New("memcg-test-none", 0); err == nil {
		t.Fatal("a group without a limit was made")
	}
}
