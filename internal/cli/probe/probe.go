package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/fsutil"
	"github.com/nap-k8s/nap/observe"
	"github.com/nap-k8s/nap/probe"
)

type flags struct {
	rate        float64
	duration    time.Duration
	during      string
	settle      time.Duration
	timeout     time.Duration
	conns       []string
	bucket      time.Duration
	output      string
	plot        string
	title       string
	streams     int
	maxFailures int
	maxInFlight int
	retry       bool
	host        string
	dns         string
	watch       string
	namespace   string
	cluster     cli.Cluster
	// clusterGiven is the first of the cluster's flags given ("": none).
	clusterGiven string
	junit        string
	listFailures bool
}

// NewCommand returns the probe command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "probe URL [--rate 100] [--duration 60s | --during CMD] [--settle 5s] [--timeout 2s] [--conn new,reuse] [--bucket D] [--watch TARGET [-n NS]] [-o text|json [--list-failures]] [--plot FILE.svg|.html] [--junit FILE] [--max-failures N]",
		Short: "Measure failed requests against a URL, during a rollout",
		Long: "Send GET requests to URL open-loop at --rate (on schedule, whether or not earlier\n" +
			"ones returned), over new connections and a keep-alive pool at once, and report every\n" +
			"failure: refused, reset, timeout, EOF, 5xx, other status; the outages; latency.\n\n" +
			"  napctl probe http://10.96.0.10/ --during 'kubectl rollout restart deploy/web && kubectl rollout status deploy/web'\n\n" +
			"A grpc://HOST:PORT[/SERVICE] URL sends gRPC calls instead: the standard health service's\n" +
			"Check (grpc.health.v1), a connection per call and one shared connection.\n\n" +
			"--watch deploy/web (or a label selector) also watches the pods behind the URL and\n" +
			"their endpoints in every EndpointSlice, and puts each change on the timeline next to\n" +
			"the failures it explains: pod created, ready, termination began, containers exited,\n" +
			"deleted; endpoint ready, terminating, removed.\n\n" +
			"Exit status 1 when more than --max-failures requests failed (or the command failed).\n" +
			"Ctrl-C stops and prints the report so far.",
		Args:        cobra.ExactArgs(1),
		Annotations: map[string]string{cli.VerdictAnnotation: "1"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.CheckOutput(cmd, f.output, "text", "json"); err != nil {
				return err
			}
			f.clusterGiven = f.cluster.Given(cmd.Flags())
			return run(cmd.Context(), streams, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&f.rate, "rate", probe.DefaultRate, "requests per second, all connection modes together")
	fl.DurationVar(&f.duration, "duration", probe.DefaultDuration, "how long to probe (without --during)")
	fl.StringVar(&f.during, "during", "", "probe while this shell command runs, then --settle more")
	fl.DurationVar(&f.settle, "settle", probe.DefaultSettle, "with --during: how long to go on after the command exits")
	fl.DurationVar(&f.timeout, "timeout", probe.DefaultTimeout, "per-request timeout")
	fl.StringSliceVar(&f.conns, "conn", []string{"new", "reuse"}, "connection modes: new (a connection per request), reuse (keep-alive)")
	fl.DurationVar(&f.bucket, "bucket", 0, "timeline bucket (default: 100ms, doubled whenever the run passes 600 buckets)")
	cli.OutputFlag(cmd, &f.output, "text", "json")
	fl.StringVar(&f.plot, "plot", "", "also write a timeline plot: FILE.svg or FILE.html")
	fl.IntVar(&f.streams, "streams", 0, "hold this many streams open instead of sending requests: WebSockets at a ws:// URL, event streams (text/event-stream) at an http:// one; count broken ends, reconnects, lost messages")
	fl.StringVar(&f.title, "title", "", "what is measured, for a person (\"a rolling restart of web\"): the plot's heading, the reports' title")
	fl.IntVar(&f.maxFailures, "max-failures", 0, "exit 1 when more requests than this failed")
	fl.IntVar(&f.maxInFlight, "max-in-flight", 0, "requests waiting for an answer at most; one due beyond it is not sent and counts as unsent (default: 2 × rate × timeout + 64)")
	fl.StringVar(&f.watch, "watch", "", "also watch the pods and EndpointSlices of this target: KIND/NAME (deployment, statefulset, daemonset, replicaset) or a label selector")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "with --watch: the target's namespace (default: the kubeconfig context's)")
	f.cluster.Flags(fl) // with --watch
	fl.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to FILE, failing as the exit status does")
	fl.StringVar(&f.host, "host", "", "the name requests give the server instead of the URL's host (HTTP's Host header, gRPC's :authority): an ingress that routes by host, reached at its address")
	fl.StringVar(&f.dns, "dns", "", "resolve the URL's host at this DNS server (ADDR:PORT: a cluster's DNS, the ClusterIP of kube-system/kube-dns, port 53, from a node) instead of the system's: a headless Service's name, resolved at each new connection; for grpc://, the shared connection is gRPC's round_robin over the answer, resolved again only when it loses a connection, at most every 30 s")
	fl.BoolVar(&f.listFailures, "list-failures", false, "with -o json: list each failed request (failed_requests: when it was due, to the nanosecond, its connection mode, kind, status, error and client address), to set beside another record's times")
	fl.BoolVar(&f.retry, "retry", false, "let a request on a keep-alive connection found closed be resent once, silently, as Go clients do (default: counted as failed, as most clients see it)")
	return cmd
}

func run(ctx context.Context, streams cli.IOStreams, f *flags, url string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var modes []probe.Mode
	for _, c := range f.conns {
		switch m := probe.Mode(c); m {
		case probe.New, probe.Reuse:
			modes = append(modes, m)
		default:
			return fmt.Errorf("--conn %q: want new or reuse", c)
		}
	}
	if ext := filepath.Ext(f.plot); f.plot != "" && ext != ".svg" && ext != ".html" {
		return fmt.Errorf("--plot %q: want a .svg or .html file", f.plot)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--duration", f.duration}, {"--timeout", f.timeout}} {
		if d.v <= 0 {
			return fmt.Errorf("%s %v: must be positive", d.name, d.v)
		}
	}
	if f.bucket < 0 {
		return fmt.Errorf("--bucket %v: must be positive (or 0: automatic)", f.bucket)
	}
	if f.watch == "" && f.namespace != "" {
		return fmt.Errorf("-n goes with --watch")
	}
	if f.watch == "" && f.clusterGiven != "" {
		return fmt.Errorf("%s goes with --watch", f.clusterGiven)
	}
	if f.listFailures && f.output != "json" {
		return fmt.Errorf("--list-failures goes with -o json")
	}
	if f.settle < 0 {
		return fmt.Errorf("--settle %v: must not be negative", f.settle)
	}
	m := probe.Measurement{
		Options: probe.Options{URL: url, Rate: f.rate, Timeout: f.timeout, Modes: modes, MaxInFlight: f.maxInFlight, Retry: f.retry, Duration: f.duration, Streams: f.streams, Host: f.host, DNS: f.dns},
		During:  f.during, Settle: f.settle, CommandOutput: streams.ErrOut, Bucket: f.bucket,
	}
	if err := m.Options.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	if f.watch != "" {
		// Before the first request: the watch lists what exists, then records changes.
		w, name, err := startWatch(ctx, f)
		if err != nil {
			return &cli.ExitError{Code: 2, Err: err}
		}
		defer w.Stop()
		m.Watch, m.Events = name, func(start time.Time) []probe.Event { return observe.ProbeEvents(w.Stop(), start) }
	}
	live := isTerminal(streams.ErrOut)
	if live {
		m.Progress = func(elapsed time.Duration, tot probe.Counts) {
			fmt.Fprintf(streams.ErrOut, "\r%5.0fs  %d requests  %d failed   ", elapsed.Seconds(), tot.Requests, tot.Failed)
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM) // Ctrl-C: report so far
	defer stop()
	s, err := probe.Measure(ctx, m)
	s.Title = f.title
	if live {
		fmt.Fprintln(streams.ErrOut)
	}
	var cmdErr *probe.CommandError
	if err != nil && !errors.As(err, &cmdErr) {
		return err
	}
	var out bytes.Buffer
	if f.output == "json" {
		if f.listFailures {
			s.ListFailures()
		}
		err = probe.JSON(&out, s)
	} else {
		err = probe.Text(&out, s)
	}
	if err != nil {
		return err
	}
	if _, err := streams.Out.Write(out.Bytes()); err != nil {
		return err
	}
	if f.plot != "" {
		var p bytes.Buffer
		if strings.HasSuffix(f.plot, ".html") {
			err = probe.HTML(&p, s)
		} else {
			err = probe.SVG(&p, s)
		}
		if err == nil {
			err = fsutil.WriteFileAtomic(f.plot, p.Bytes(), 0o644)
		}
		if err != nil {
			return fmt.Errorf("--plot %s: %w", f.plot, err)
		}
	}
	if f.junit != "" {
		var j bytes.Buffer
		err := probe.JUnit(&j, s, f.maxFailures)
		if err == nil {
			err = fsutil.WriteFileAtomic(f.junit, j.Bytes(), 0o644)
		}
		if err != nil {
			return fmt.Errorf("--junit %s: %w", f.junit, err)
		}
	}
	switch {
	case cmdErr != nil:
		return cmdErr
	case s.Streams != nil && s.Streams.Failed() > f.maxFailures:
		return &cli.ExitError{Code: 1, Err: fmt.Errorf("%d broken streams, empty connections and lost messages (--max-failures %d)", s.Streams.Failed(), f.maxFailures)}
	case s.Total.Failed > f.maxFailures:
		return &cli.ExitError{Code: 1, Err: fmt.Errorf("%d requests failed (--max-failures %d)", s.Total.Failed, f.maxFailures)}
	case s.Command != nil && s.Command.ExitCode != 0:
		return &cli.ExitError{Code: 1, Err: fmt.Errorf("--during: the command exited %d", s.Command.ExitCode)}
	}
	return nil
}

// startWatch resolves --watch in its namespace and starts watching it.
func startWatch(ctx context.Context, f *flags) (*observe.Watcher, string, error) {
	cc := f.cluster.ClientConfig()
	ns := f.namespace
	if ns == "" {
		var err error
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, "", fmt.Errorf("--watch: %w", err)
		}
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("--watch: %w", err)
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	t, err := observe.Resolve(ctx, cs, ns, f.watch)
	if err != nil {
		return nil, "", err
	}
	w, err := observe.Start(ctx, cs, t)
	if err != nil {
		return nil, "", err
	}
	return w, t.Name + " in namespace " + ns, nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
