package lint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/version"
	nlint "github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/live"
	"github.com/nap-k8s/nap/manifest"
)

type flags struct {
	files       []string
	output      string
	kubeVersion string
	kubelet     string // --kubelet-version
	failOn      string
	config      string
	calibration string
	live        cli.Live
	namespace   string
	prog        string // the command the user typed: napctl, or kubectl nap
	stdinName   string
}

// formats are lint's -o.
var formats = []string{"text", "json", "sarif"}

// NewCommand returns the lint command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "lint [-f FILE|DIR|-]... [PATH]... | --live [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [-o text|json|sarif] [--kube-version X.Y] [--fail-on warning|error] [--config FILE]",
		Short: "Find zero-downtime mistakes in manifests or in a live cluster",
		Long: "Lint Kubernetes manifests (YAML, multi-document, JSON, Lists; helm template or\n" +
			"kustomize build output on stdin) for the termination path: readiness, preStop delays,\n" +
			"grace periods, native sleep, replicas, rollout strategy and PodDisruptionBudgets.\n\n" +
			"With --live, the same checks run on the live Deployments, StatefulSets, DaemonSets,\n" +
			"Services, PodDisruptionBudgets, HorizontalPodAutoscalers and Ingresses of the cluster\n" +
			"(every namespace, or -n), with its real API server and kubelet versions; it only lists.\n" +
			"Findings name the object as " + live.Prefix + "Kind/namespace/name.\n\n" +
			"Exit status: 0 clean, 1 a finding at or above --fail-on, 2 a usage error, no objects,\n" +
			"unreadable input or output that could not be written.\n" +
			"Skip checks on one object with the annotation " + nlint.IgnoreAnnotation + ": \"id,id\" (or \"*\").",
		Args:        cobra.ArbitraryArgs,
		Annotations: map[string]string{cli.VerdictAnnotation: "1"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.CheckOutput(cmd, f.output, formats...); err != nil {
				return err
			}
			f.prog = cmd.Root().DisplayName()
			if err := f.live.Resolve(cmd); err != nil {
				return err
			}
			if f.live.On && len(args) > 0 {
				return cli.UsageError(cmd, fmt.Errorf("%s lints the cluster's objects: no paths with it (%s)", f.live.Flag(), strings.Join(args, " ")))
			}
			if !f.live.On {
				paths, err := cli.Inputs(cmd, f.files, args, streams.In)
				if err != nil {
					return err
				}
				f.files = paths
			}
			return run(streams, f)
		},
	}
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "manifest file, directory or - for stdin (repeatable; default stdin)")
	cli.OutputFlag(cmd, &f.output, formats...)
	cmd.Flags().StringVar(&f.kubeVersion, "kube-version", "", "the target cluster's Kubernetes version (X.Y), for version-dependent checks")
	cli.KubeletVersionFlag(cmd.Flags(), &f.kubelet)
	cmd.Flags().StringVar(&f.failOn, "fail-on", "error", "exit 1 when a finding has this severity or higher: warning or error")
	cli.Complete(cmd, "fail-on", "warning", "error")
	cmd.Flags().StringVar(&f.stdinName, "stdin-filename", "", "the name findings give manifests read from stdin (default -): the chart's path, so that SARIF and file:line point into the repository")
	cmd.Flags().StringVar(&f.config, "config", "", "configuration file: disable checks, change severities")
	cli.CalibrationFlag(cmd.Flags(), &f.calibration)
	f.live.Flags(cmd.Flags(), "lint the live objects of the cluster instead of files")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "with --live: only this namespace (default: every namespace)")
	return cmd
}

func run(streams cli.IOStreams, f *flags) error {
	failOn, err := nlint.ParseSeverity(f.failOn)
	if err != nil {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("--fail-on: %w", err)}
	}
	if !f.live.On && f.namespace != "" {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("--namespace goes with --live")}
	}
	if f.live.On && (len(f.files) > 0 || f.kubeVersion != "" || f.kubelet != "") {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("%s lints the cluster's objects with its own versions: no -f, --kube-version or --kubelet-version with it", f.live.Flag())}
	}
	var opts nlint.Options
	if f.kubeVersion != "" {
		v, err := nlint.ParseVersion(f.kubeVersion)
		if err != nil {
			return &cli.ExitError{Code: 2, Err: fmt.Errorf("--kube-version: %w", err)}
		}
		opts.KubeVersion = &v
	}
	if opts.Nodes, err = cli.AssumedNodes(opts.KubeVersion, f.kubelet); err != nil {
		return &cli.ExitError{Code: 2, Err: err}
	}
	if f.config != "" {
		if opts.Config, err = nlint.LoadConfig(f.config); err != nil {
			return &cli.ExitError{Code: 2, Err: fmt.Errorf("--config: %w", err)}
		}
	}
	if cal, err := cli.ReadCalibration(f.calibration); err != nil {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("--calibration: %w", err)}
	} else if cal != nil {
		opts.Calibration = cal
	}
	var objs []*manifest.Object
	unreadable := 0 // files found in folders that could not be read: the run fails at the end
	if f.live.On {
		objs, err = readCluster(f, &opts, streams.ErrOut)
	} else {
		var skipped []manifest.Skipped
		objs, skipped, err = manifest.ReadPaths(f.files, streams.In)
		for _, sk := range skipped {
			fmt.Fprintf(streams.ErrOut, "%s lint: %s\n", f.prog, sk.Note(f.prog+" lint -f -"))
			if sk.Err != nil {
				unreadable++
			}
		}
		if err == nil && len(objs) == 0 {
			// An empty file, /dev/null, a closed stdin, a helm template that failed: a
			// pipeline that lints nothing must not pass.
			err = fmt.Errorf("no objects in %s", strings.Join(f.files, ", "))
		}
	}
	if err != nil {
		return &cli.ExitError{Code: 2, Err: err}
	}
	for _, o := range objs { // what it does not check, it says (Jobs serve nothing)
		if why := o.LeftAlone(); why != "" && !o.RunsToCompletion() {
			fmt.Fprintf(streams.ErrOut, "%s lint: %s:%d: %s: not checked: %s\n", f.prog, o.File, o.Line, o.Ref(), why)
		}
	}
	// An object two inputs hold is one object: said, and counted once. A workload that
	// does not read as its kind (a field of the wrong type) is named and left out; the
	// others are checked, and the run fails at the end as for any invalid input.
	in := nlint.Read(objs)
	for _, d := range in.Duplicates {
		fmt.Fprintf(streams.ErrOut, "%s lint: %s\n", f.prog, d)
	}
	for _, u := range in.Unchecked {
		fmt.Fprintf(streams.ErrOut, "%s lint: %s\n", f.prog, u)
	}
	findings := nlint.CheckWorkloads(in.Workloads, opts)
	for i := range findings {
		if f.prog != "" && f.prog != "napctl" { // the hints name the command the user runs
			findings[i].Hint = strings.ReplaceAll(findings[i].Hint, "napctl ", f.prog+" ")
		}
		if findings[i].File == "-" && f.stdinName != "" {
			findings[i].File = f.stdinName
		}
	}
	var out bytes.Buffer // nothing half-written: render fully, then write
	switch f.output {
	case "text":
		err = nlint.Text(&out, findings)
	case "json":
		err = nlint.JSON(&out, findings)
	case "sarif":
		err = nlint.SARIF(&out, findings, version.Version)
	}
	if err != nil {
		return err
	}
	if _, err := streams.Out.Write(out.Bytes()); err != nil {
		return err
	}
	if len(in.Unchecked) > 0 || unreadable > 0 {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("%s not checked: invalid input (above)", notChecked(unreadable, len(in.Unchecked)))}
	}
	for _, fd := range findings {
		if fd.Severity >= failOn {
			return &cli.ExitError{Code: 1}
		}
	}
	return nil
}

// readCluster reads the live objects of the cluster and sets opts to its versions: the API
// server's, and every node's kubelet.
func readCluster(f *flags, opts *nlint.Options, errOut io.Writer) ([]*manifest.Object, error) {
	cfg, err := cli.RESTConfig(f.live.Cluster)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.live.Flag(), err)
	}
	v, nodes, err := cli.ClusterVersionsOf(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.live.Flag(), err)
	}
	opts.KubeVersion, opts.Nodes = &v, nodes
	if opts.Calibration == nil {
		// The calibration kept in the cluster; one that is not a calibration is left
		// out with a word, as the controller does.
		cal, err := cli.KeptCalibration(context.Background(), cfg)
		if err != nil {
			fmt.Fprintf(errOut, "%s lint: not holding delays to a calibration: %v\n", f.prog, err)
		} else if cal != nil {
			opts.Calibration = cal
		}
	}
	objs, err := live.Read(context.Background(), cfg, f.namespace)
	var unread live.Unread
	if errors.As(err, &unread) { // the front doors of kinds it may not list: said, not fatal
		fmt.Fprintf(errOut, "%s lint: %v\n", f.prog, unread)
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.live.Flag(), err)
	}
	return objs, nil
}

// notChecked says what a run could not check: files and workloads.
func notChecked(files, workloads int) string {
	var parts []string
	if files > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s)", files))
	}
	if workloads > 0 {
		parts = append(parts, fmt.Sprintf("%d workload(s)", workloads))
	}
	return strings.Join(parts, " and ")
}
