package app

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testutil/rendered"
)

// injectBytesPerInput is inject's memory budget: its peak RSS at most this many bytes
// per byte of input. It holds the input and the changed documents' text, and one
// document's tree at a time (inject.Parts); before that it held every tree, twice:
// 5.1 GB for 53 MB (about 100 bytes per byte).
const injectBytesPerInput = 8

// BenchmarkLargeManifest runs napctl inject and napctl lint, as processes, on a
// manifest of NAP_BENCH_MANIFEST_MB megabytes (default 50) of Deployments and Services
// as a chart renders them, and reports each one's wall time and peak RSS (make bench).
// It fails when inject's peak RSS is past its budget.
func BenchmarkLargeManifest(b *testing.B) {
	mb := 50
	if s := os.Getenv("NAP_BENCH_MANIFEST_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil {
			b.Fatalf("NAP_BENCH_MANIFEST_MB=%q: %v", s, err)
		}
	}
	dir := b.TempDir()
	napctl := filepath.Join(dir, "napctl")
	if out, err := exec.Command("go", "build", "-o", napctl, "github.com/nap-k8s/nap/cmd/napctl").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	data, apps := rendered.AppsOf(mb << 20)
	in := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("input: %d bytes, %d Deployments and %d Services", len(data), apps, apps)
	run := func(b *testing.B, wantCode int, args ...string) (out []byte, rssMiB float64) {
		for b.Loop() {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(napctl, args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			wall := time.Since(start)
			if code := cmd.ProcessState.ExitCode(); code != wantCode {
				b.Fatalf("napctl %v: exit %d (%v), want %d\n%.2000s", args, code, err, wantCode, stderr.Bytes())
			}
			rssMiB = float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
			b.ReportMetric(rssMiB, "MiB-peak-rss")
			b.ReportMetric(wall.Seconds(), "s/run")
			out = stdout.Bytes()
		}
		b.ReportMetric(float64(len(data))/(1<<20), "MiB-input")
		return out, rssMiB
	}
	b.Run("Inject", func(b *testing.B) {
		out, rss := run(b, 0, "inject", "--mode", "binary", "-f", in)
		if n := bytes.Count(out, []byte("preStop:")); n != apps {
			b.Errorf("%d preStop hooks in %d bytes of output, want %d", n, len(out), apps)
		}
		if budget := float64(injectBytesPerInput*len(data)) / (1 << 20); rss > budget {
			b.Errorf("peak RSS %.0f MiB for %.0f MiB of input: past the budget of %d× the input (%.0f MiB)", rss, float64(len(data))/(1<<20), injectBytesPerInput, budget)
		}
	})
	b.Run("Lint", func(b *testing.B) {
		out, _ := run(b, 0, "lint", "-f", in, "-o", "json")
		if n := bytes.Count(out, []byte(`"no-prestop-delay"`)); n != apps {
			b.Errorf("%d no-prestop-delay findings, want %d", n, apps)
		}
	})
}

// lintMappingBytesPerInput is napctl lint's budget of peak RSS per byte of a manifest
// whose bulk is one mapping, beyond lintBaseMiB (napctl's own, about 85 MiB on any
// input): the YAML node tree is about 45× the text for block keys and 60× for short
// flow items (make bench).
const (
	lintMappingBytesPerInput = 80
	lintBaseMiB              = 100
)

// BenchmarkLargeMapping runs napctl lint, as a process, on ConfigMaps whose bulk is one
// mapping (the shapes where yaml.v3's decoder was quadratic: 80,000 keys took 34 s, and
// 1,000,000 did not finish in 180 s), and reports each one's wall time and peak RSS.
// It fails past lintMappingBytesPerInput.
func BenchmarkLargeMapping(b *testing.B) {
	dir := b.TempDir()
	napctl := filepath.Join(dir, "napctl")
	if out, err := exec.Command("go", "build", "-o", napctl, "github.com/nap-k8s/nap/cmd/napctl").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	head := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:"
	for _, c := range []struct {
		name string
		keys int
		flow bool
	}{{"block-80k", 80_000, false}, {"block-1M", 1_000_000, false}, {"flow-1M", 1_000_000, true}} {
		var buf bytes.Buffer
		buf.WriteString(head)
		if c.flow {
			buf.WriteString(" {")
			for i := range c.keys {
				if i > 0 {
					buf.WriteByte(',')
				}
				fmt.Fprintf(&buf, "k%d: v", i)
			}
			buf.WriteString("}\n")
		} else {
			buf.WriteByte('\n')
			for i := range c.keys {
				fmt.Fprintf(&buf, "  k%07d: v\n", i)
			}
		}
		in := filepath.Join(dir, c.name+".yaml")
		if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			var rss float64
			for b.Loop() {
				var stderr bytes.Buffer
				cmd := exec.Command(napctl, "lint", "-f", in)
				cmd.Stderr = &stderr
				start := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatalf("napctl lint: %v\n%.2000s", err, stderr.Bytes())
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/run")
				rss = float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
				b.ReportMetric(rss, "MiB-peak-rss")
			}
			b.ReportMetric(float64(buf.Len())/(1<<20), "MiB-input")
			if budget := lintBaseMiB + float64(lintMappingBytesPerInput*buf.Len())/(1<<20); rss > budget {
				b.Errorf("peak RSS %.0f MiB for %.1f MiB of input: past the budget of %d MiB and %d× the input (%.0f MiB)", rss, float64(buf.Len())/(1<<20), lintBaseMiB, lintMappingBytesPerInput, budget)
			}
		})
	}
}
