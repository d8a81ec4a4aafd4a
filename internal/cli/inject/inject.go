package inject

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

type flags struct {
	files       []string
	delay       string
	mode        string
	kubeVersion string
	kubelet     string // --kubelet-version
	live        cli.Live
	liveWait    bool
	containers  []string
	arch        string
	graceExtra  time.Duration
	configMap   string
	delivery    string
	image       string
	wait        string
	min, quiet  string
	requests    string
	delayGiven  bool   // --delay was given (else the adaptive wait's MAX is its own default)
	prog        string // the command the user typed: napctl, or kubectl nap
}

// NewCommand returns the inject command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "inject [-f FILE|DIR|-]... [PATH]... [--delay 10s] [--wait fixed|adaptive] [--mode auto|native|binary] [--kube-version X.Y | --live [--kubeconfig FILE] [--context NAME]] [--container NAME]... [--arch amd64|arm64] [--grace-extra 30s]",
		Short: "Add a preStop delay to every pod template in manifests",
		Long: "Add a preStop delay to the pod templates of Pods, Deployments, StatefulSets,\n" +
			"DaemonSets, ReplicaSets and ReplicationControllers, and write the manifests to stdout\n" +
			"with nothing else changed: comments, order, quoting and layout stay byte for byte.\n\n" +
			"Modes: native uses the Kubernetes sleep action (1.30+, whole seconds); binary mounts\n" +
			"nap from the nap ConfigMap (napctl configmap), or with --delivery image from nap's image\n" +
			"as an image volume (napctl image), and runs it; auto (default) picks native\n" +
			"when --kube-version or --live says it is there and the delay is whole seconds.\n" +
			"terminationGracePeriodSeconds is raised to at least the delay plus --grace-extra.\n\n" +
			"--wait adaptive: nap waits at least --min, then until no new connection has reached\n" +
			"the pod for --quiet (beyond what its probes open), at most --delay (default 60s then):\n" +
			"a preStop that ends when the pod's traffic has. nap's binary only.\n\n" +
			"Containers that already have a preStop, Jobs and CronJobs are left alone (noted on\n" +
			"stderr); so, where the input holds Services, are the templates no Service selects\n" +
			"(as the webhook's default policy; the label nap.dev/inject=enabled opts one in).\n" +
			"Running it again changes nothing.\n\n" +
			"  kustomize build . | napctl inject --kube-version 1.31 | kubectl apply -f -",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.delayGiven = cmd.Flags().Changed(wait.FlagDelay)
			if !cmd.Flags().Changed("arch") {
				f.arch = "" // assumed, not named: the plan says where it mounted it so
			}
			f.prog = cmd.Root().DisplayName()
			if err := f.live.Resolve(cmd); err != nil {
				return err
			}
			if err := checkDelay(cmd, f.delay); err != nil {
				return err
			}
			paths, err := cli.Inputs(cmd, f.files, args, streams.In)
			if err != nil {
				return err
			}
			f.files = paths
			return run(streams, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "manifest file, directory or - for stdin (repeatable; default stdin)")
	fl.StringVar(&f.delay, wait.FlagDelay, wait.DefaultInput.Delay, "the preStop delay, in nap's syntax (10s, 1.5, 500ms)")
	fl.StringVar(&f.mode, "mode", "auto", "auto, native or binary")
	fl.StringVar(&f.kubeVersion, "kube-version", "", fmt.Sprintf("the target cluster's Kubernetes version (X.Y), for --mode auto: its kubelets are then taken to be as old as the version skew policy allows (%d minors older), unless --kubelet-version says otherwise or --live reads them", kube.MaxKubeletSkew))
	cli.KubeletVersionFlag(fl, &f.kubelet)
	f.live.Flags(fl, "ask the cluster for its version and its kubelets, for --mode auto and --delivery auto")
	fl.StringArrayVar(&f.containers, "container", nil, "delay only this container (repeatable; may name a sidecar init container)")
	fl.StringVar(&f.arch, "arch", "amd64", "nap's architecture when a template does not select one: "+strings.Join(nap.Arches, ", "))
	cli.DurationFlag(fl, &f.graceExtra, "grace-extra", inject.DefaultGraceExtra, "time beyond the delay that terminationGracePeriodSeconds leaves for draining")
	fl.StringVar(&f.configMap, "configmap", kube.ConfigMapName, "the nap ConfigMap's name")
	fl.StringVar(&f.delivery, "delivery", string(inject.DeliveryConfigMap), "how nap reaches the container (binary mode): configmap, image (an image volume of --image; Kubernetes 1.35+, containerd 2.1+ or CRI-O 1.31+), or auto (image where --live shows every node can, else configmap)")
	fl.StringVar(&f.image, "image", "", "nap's image reference, for --delivery image or auto (napctl image writes it)")
	fl.BoolVar(&f.liveWait, cli.LiveWaitFlag, false, cli.LiveWaitHelp)
	fl.StringVar(&f.wait, wait.FlagKind, wait.DefaultInput.Kind, "fixed (the hook holds for --delay) or adaptive (until the pod's traffic has stopped, at most --delay)")
	fl.StringVar(&f.min, wait.FlagMin, wait.DefaultInput.Min, "--wait adaptive: the least it holds")
	fl.StringVar(&f.quiet, wait.FlagQuiet, wait.DefaultInput.Quiet, "--wait adaptive: how long no new connection must reach the pod")
	fl.StringVar(&f.requests, wait.FlagRequests, wait.DefaultInput.Requests, cli.RequestsHelp)
	return cmd
}

// waitInput is the wait the flags give: --delay is the fixed wait's delay, or the
// adaptive wait's MAX (its own default, 60s, when not given).
func (f *flags) waitInput() wait.Input {
	in := wait.Input{Kind: f.wait, Delay: f.delay, Min: f.min, Quiet: f.quiet, Requests: f.requests, MaxFlag: wait.FlagDelay}
	if f.delayGiven {
		in.Max = f.delay
	}
	return in
}

// LongDelay is the delay past which inject warns: each pod of a rollout, scale-down or
// drain may take that long to go.
const LongDelay = 10 * time.Minute

// checkDelay refuses a --delay that holds nothing: given empty, or 0.
func checkDelay(cmd *cobra.Command, delay string) error {
	if !cmd.Flags().Changed("delay") {
		return nil
	}
	switch r, err := nap.Parse([]string{strings.TrimSpace(delay)}); {
	case strings.TrimSpace(delay) == "":
		return cli.UsageError(cmd, fmt.Errorf("--delay %q: want a duration, such as 10s", delay))
	case err == nil && !r.Infinite && r.Duration == 0:
		return cli.UsageError(cmd, fmt.Errorf("--delay %q: a preStop delay of 0 holds nothing; want the time your routes take to forget a pod (%s calibrate measures it)", delay, cmd.Root().DisplayName()))
	}
	return nil
}

func run(streams cli.IOStreams, f *flags) error {
	pw, err := f.waitInput().Wait()
	if err != nil {
		return err
	}
	opts := inject.Options{
		Wait: pw, Mode: inject.Mode(f.mode), Containers: f.containers, Arch: f.arch,
		GraceExtra: &f.graceExtra, ConfigMap: f.configMap, Delivery: inject.Delivery(f.delivery), Image: f.image, Live: f.liveWait,
	}
	switch {
	case f.kubelet != "" && f.kubeVersion == "":
		return fmt.Errorf("--kubelet-version %s goes with --kube-version (%s reads the nodes' own)", f.kubelet, f.live.Flag())
	case f.kubeVersion != "" && f.live.On:
		return fmt.Errorf("--kube-version and %s: give one", f.live.Flag())
	case f.kubeVersion != "":
		v, err := kube.ParseVersion(f.kubeVersion)
		if err != nil {
			return fmt.Errorf("--kube-version: %w", err)
		}
		opts.Kube = &v
		if opts.Nodes, err = cli.AssumedNodes(opts.Kube, f.kubelet); err != nil {
			return err
		}
	case f.live.On:
		v, nodes, err := cli.ClusterVersions(f.live.Cluster)
		if err != nil {
			return fmt.Errorf("%s: %w", f.live.Flag(), err)
		}
		opts.Kube, opts.Nodes = &v, nodes
	}
	plan, err := inject.NewPlan(opts)
	if err != nil {
		return err
	}
	if d := plan.Wait.Delay; d > LongDelay {
		fmt.Fprintf(streams.ErrOut, "%s inject: warning: --delay %s: every pod of a rollout, scale-down or drain may take %v to go (terminationGracePeriodSeconds %d)\n",
			f.prog, f.delay, d, int64((d + plan.GraceExtra).Seconds()))
	}
	if plan.DeliveryWhy != "" {
		fmt.Fprintf(streams.ErrOut, "%s inject: --delivery auto: the nap ConfigMap, not the image volume: %s\n", f.prog, plan.DeliveryWhy)
	}
	files, err := manifest.ReadFiles(f.files, streams.In)
	if err != nil {
		return err
	}
	// Nothing half-written: all of it, or nothing. The output is held as the pieces
	// inject.Parts returns (unchanged documents are the input's bytes), and written at
	// the end.
	var out inject.Output
	var notes []inject.Note
	endsLine := true // the output so far ends a line
	// With Services in the input, the templates that get the delay are the ones the
	// webhook's default policy would give it: those a Service selects.
	for _, file := range files {
		if _, skip := file.Skip(nil); skip {
			continue
		}
		svcs, err := inject.ServicesIn(file.Name, file.Data)
		if _, skip := file.Skip(err); err != nil && !skip {
			return err
		}
		plan.AddServices(svcs)
	}
	var skipped []manifest.Skipped
	for i, file := range files {
		if sk, ok := file.Skip(nil); ok {
			skipped = append(skipped, sk)
			continue
		}
		parts, n, err := inject.Parts(file.Name, file.Data, plan)
		if sk, ok := file.Skip(err); err != nil && ok {
			skipped = append(skipped, sk)
			continue
		}
		if err != nil {
			return err
		}
		files[i].Data = nil
		notes = append(notes, n...)
		if out.Len() > 0 && !blank(parts) {
			if out.Len() > 0 && !endsLine {
				// The file before ends without a line break: give it one that changes
				// no value (a block scalar at its end gets strip chomping).
				out[len(out)-1] = inject.EndLine(out[len(out)-1])
			}
			if !bytes.HasPrefix(firstNonEmpty(parts), []byte("---")) {
				out = append(out, []byte("---\n"))
			}
		}
		for _, b := range parts {
			if len(b) > 0 {
				out = append(out, b)
				endsLine = b[len(b)-1] == '\n'
			}
		}
	}
	unreadable := 0 // files found in folders that could not be read: the run fails at the end
	for _, sk := range skipped {
		fmt.Fprintln(streams.ErrOut, f.prog+" inject:", sk.Note(f.prog+" inject -f -"))
		if sk.Err != nil {
			unreadable++
		}
	}
	if plan.Objects() == 0 {
		// Comments alone (a helm template with every template off), an empty file, a
		// closed stdin: a pipeline that applies nothing must stop here, as lint does.
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("no objects in %s", strings.Join(names(files), ", "))}
	}
	if un := plan.Unmatched(); len(un) > 0 {
		return fmt.Errorf("--container %s: no pod template has a container of that name", strings.Join(un, ", "))
	}
	if nss := plan.ConfigMapNamespaces(); len(nss) > 0 && (opts.Mode == "" || opts.Mode == inject.ModeAuto) {
		var cmds []string // one command a namespace, NAMESPACE where the input names none
		for i, ns := range nss {
			if ns == "" {
				nss[i], ns = "the namespace you apply to", "NAMESPACE"
			}
			cmds = append(cmds, fmt.Sprintf("%s configmap -n %s | kubectl apply -f -", f.prog, ns))
		}
		why := "the cluster's version is unknown (--kube-version or --live lets auto choose the native sleep)"
		if opts.Kube != nil {
			why = "the native sleep was not possible everywhere"
			if oldest, _ := kube.OldestKubelet(*opts.Kube, nil, nil); opts.Nodes == nil && oldest.Less(kube.NativeSleepSince) {
				// The assumption named: the API server's version alone allows kubelets
				// the skew policy's minors older, and they run the hook.
				why = fmt.Sprintf("with the API server at %v and the nodes unread, a kubelet may be as old as %v, %d minors of skew, older than the native sleep's %v: --kubelet-version says how old yours are, --live reads them",
					*opts.Kube, oldest, kube.MaxKubeletSkew, kube.NativeSleepSince)
			}
		}
		if plan.Wait.IsAdaptive() {
			why = "--wait adaptive needs it"
		}
		fmt.Fprintf(streams.ErrOut, "%s inject: --mode auto: nap's binary from the ConfigMap %q (%s); it must be in %s: %s\n",
			f.prog, plan.ConfigMap, why, strings.Join(nss, ", "), strings.Join(cmds, "; "))
	}
	if n := plan.AssumedArch(); n > 0 {
		fmt.Fprintf(streams.ErrOut, "%s inject: warning: %d pod templates select no architecture (a kubernetes.io/arch nodeSelector or required node affinity): nap is mounted for %s, and on a node of another architecture their hook cannot run and the pod stops without a delay. --arch names your nodes' architecture; --live reads it from the nodes\n",
			f.prog, n, plan.Arch)
	}
	// Written in the input's encoding: UTF-16 input (a PowerShell redirect) comes back as
	// UTF-16, with its byte-order mark; inputs in several encodings come out as UTF-8.
	if enc, mixed := outputEncoding(files); enc != manifest.UTF8 {
		out = inject.Output{manifest.FromUTF8(bytes.Join(out, nil), enc)}
	} else if mixed {
		for _, file := range files {
			if file.Encoding != manifest.UTF8 {
				fmt.Fprintf(streams.ErrOut, "%s inject: %s is %s, the other inputs are not: all are written as UTF-8\n", f.prog, file.Name, file.Encoding)
			}
		}
	}
	w := bufio.NewWriterSize(streams.Out, 64<<10)
	for _, b := range out {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(streams.ErrOut, f.prog+" inject:", n)
	}
	if unreadable > 0 {
		// As kubectl apply -f with a folder: the others are written, the run fails.
		return fmt.Errorf("%d file(s) not read: invalid input (above); the others are written", unreadable)
	}
	return nil
}

// outputEncoding is the encoding every file has (UTF-8 where they differ, and then
// mixed).
func outputEncoding(files []manifest.File) (enc manifest.Encoding, mixed bool) {
	for i, f := range files {
		if i > 0 && f.Encoding != enc {
			return manifest.UTF8, true
		}
		enc = f.Encoding
	}
	return enc, false
}

// names are the files' names.
func names(files []manifest.File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name
	}
	return out
}

// blank: the pieces hold nothing but white space.
func blank(parts inject.Output) bool {
	for _, b := range parts {
		if len(bytes.TrimSpace(b)) > 0 {
			return false
		}
	}
	return true
}

// firstNonEmpty is the first piece that holds a byte.
func firstNonEmpty(parts inject.Output) []byte {
	for _, b := range parts {
		if len(b) > 0 {
			return b
		}
	}
	return nil
}
