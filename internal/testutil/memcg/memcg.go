package memcg

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Root is where the cgroup file systems are mounted.
const Root = "/sys/fs/cgroup"

// Group is one memory cgroup, made by New and removed by Remove.
type Group struct {
	Dir   string // its folder
	Limit int64  // its memory limit, bytes; swap is not allowed beyond it
	v2    bool
}

// New makes a memory cgroup named name (under nap-test/) limited to limit bytes of
// memory and no swap, as a container's memory limit is.
func New(name string, limit int64) (*Group, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("memory cgroup %s: a limit of %d bytes", name, limit)
	}
	g := &Group{Limit: limit}
	if _, err := os.Stat(filepath.Join(Root, "cgroup.controllers")); err == nil {
		g.v2 = true
		g.Dir = filepath.Join(Root, "nap-test", name)
		// The parent hands the memory controller down to its children.
		if err := os.MkdirAll(filepath.Dir(g.Dir), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(Root, "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
			return nil, fmt.Errorf("memory cgroup %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(g.Dir), "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
			return nil, fmt.Errorf("memory cgroup %s: %w", name, err)
		}
	} else {
		g.Dir = filepath.Join(Root, "memory", "nap-test", name)
	}
	if err := os.MkdirAll(g.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory cgroup %s: %w (it needs root and a memory cgroup under %s)", name, err, Root)
	}
	n := []byte(strconv.FormatInt(limit, 10))
	var err error
	if g.v2 {
		err = errors.Join(g.write("memory.max", n), g.write("memory.swap.max", []byte("0")))
	} else {
		// memsw (memory and swap) after memory: it may never be below it. A kernel
		// without swap accounting has no memsw file, and then no swap to limit.
		err = g.write("memory.limit_in_bytes", n)
		if _, statErr := os.Stat(filepath.Join(g.Dir, "memory.memsw.limit_in_bytes")); err == nil && statErr == nil {
			err = g.write("memory.memsw.limit_in_bytes", n)
		}
	}
	if err != nil {
		g.Remove()
		return nil, err
	}
	return g, nil
}

func (g *Group) write(file string, b []byte) error {
	if err := os.WriteFile(filepath.Join(g.Dir, file), b, 0o644); err != nil {
		return fmt.Errorf("memory cgroup %s: %w", g.Dir, err)
	}
	return nil
}

// Command is name with args, run in the group from its first instruction: a shell
// moves itself into the group, then execs the program.
func (g *Group) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(g.Dir, "cgroup.procs"), name}, args...)...)
}

// Peak is the most memory the kernel has charged to the group since it was made (page
// cache included, as a container's limit counts it).
func (g *Group) Peak() (int64, error) {
	file := "memory.max_usage_in_bytes"
	if g.v2 {
		file = "memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(g.Dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// OOMKills is how many processes the kernel's OOM killer has killed in the group.
func (g *Group) OOMKills() (int, error) {
	file := "memory.oom_control"
	if g.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(g.Dir, file))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if f := strings.Fields(string(line)); len(f) == 2 && f[0] == "oom_kill" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("%s: no oom_kill count (a kernel before 4.13)", filepath.Join(g.Dir, file))
}

// Remove removes the group once its processes have ended (it waits up to 10 s for them).
func (g *Group) Remove() error {
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = os.Remove(g.Dir); err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing memory cgroup %s: %w", g.Dir, err)
	}
	return nil
}
