package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nap-k8s/nap/sleeper"
	"github.com/nap-k8s/nap/sleeper/nap"
)

var qemu = map[string]string{"amd64": "qemu-x86_64-static", "arm64": "qemu-aarch64-static"}

type target struct {
	name string
	argv []string // the command without nap's own arguments
	size int
}

func main() {
	runs := flag.Int("runs", 200, "runs of `nap 0` per implementation")
	sleeps := flag.Int("sleeps", 20, "runs of `nap 0.2` per implementation")
	flag.Parse()
	if err := run(*runs, *sleeps); err != nil {
		fmt.Fprintln(os.Stderr, "bench-sleeper:", err)
		os.Exit(1)
	}
}

func run(runs, sleeps int) error {
	dir, err := os.MkdirTemp("", "nap-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ref := filepath.Join(dir, "nap-ref")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", ref, "./cmd/nap")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the reference: %w", err)
	}
	fi, err := os.Stat(ref)
	if err != nil {
		return err
	}
	targets := []target{{name: "reference (Go, -s -w)", argv: []string{ref}, size: int(fi.Size())}}
	for _, arch := range nap.Arches {
		b, err := sleeper.Binary(arch)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, "nap-"+arch)
		if err := os.WriteFile(path, b, 0o755); err != nil {
			return err
		}
		t := target{name: arch, argv: []string{path}, size: len(b)}
		if arch != runtime.GOARCH {
			q, err := exec.LookPath(qemu[arch])
			if err != nil {
				return fmt.Errorf("%s: run `make prereqs`", qemu[arch])
			}
			t.name += " (qemu-user)"
			t.argv = []string{q, path}
		}
		targets = append(targets, t)
	}

	fmt.Printf("# nap sleeper benchmark\n\n%s, %s/%s, %d CPUs. `nap 0`: %d runs; `nap 0.2`: %d runs.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runs, sleeps)
	fmt.Println("| implementation | bytes | budget | exec→exit `nap 0` p50 / p99 | overshoot of 200 ms p50 / max | peak RSS |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, t := range targets {
		var zero, over []time.Duration
		rss := int64(0)
		for range runs {
			d, _, err := once(t.argv, "0")
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			zero = append(zero, d)
		}
		for range sleeps {
			d, r, err := once(t.argv, "0.2")
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			over = append(over, d-200*time.Millisecond)
			rss = max(rss, r)
		}
		budget := "—"
		for _, arch := range nap.Arches {
			if filepath.Base(t.argv[len(t.argv)-1]) == "nap-"+arch {
				budget = fmt.Sprint(sleeper.Budget[arch])
			}
		}
		fmt.Printf("| %s | %d | %s | %v / %v | %v / %v | %d KiB |\n", t.name, t.size, budget,
			pct(zero, 50), pct(zero, 99), pct(over, 50), pct(over, 100), rss)
	}
	fmt.Println("\nPeak RSS is VmHWM of the sleeping process (under qemu-user, of qemu itself).")
	return nil
}

// once runs the command and returns its wall time from fork to reaping and, for a
// sleep, its peak RSS (VmHWM) read from /proc 100 ms in. (ru_maxrss would not do: Linux
// records in it the memory of the parent that the child shared before exec.)
func once(argv []string, arg string) (time.Duration, int64, error) {
	cmd := exec.Command(argv[0], append(argv[1:], arg)...)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	var rss int64
	if arg != "0" {
		time.Sleep(100 * time.Millisecond)
		if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				fmt.Sscanf(line, "VmHWM: %d kB", &rss)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return 0, 0, err
	}
	return time.Since(start), rss, nil
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s) - 1) * p / 100
	return s[i].Round(time.Microsecond)
}
