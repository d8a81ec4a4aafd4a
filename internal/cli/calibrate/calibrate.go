package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/calibrate"
	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/controller/install"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/fsutil"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/traffic"
)

type flags struct {
	opts    calibrate.Options
	cluster cli.Cluster
	output  string
	lbs     string
	save    string // --save: the stored calibration's file
	store   bool   // --store: kept in the cluster, in storeNS
	storeNS string
}

// NewCommand returns the calibrate command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "calibrate [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [--rounds 5] [--ingress-class CLASS --ingress-url URL] [--lb local,cluster] [-o text|json]",
		Short: "Measure how long traffic reaches a terminating pod on each path, and recommend the preStop delay",
		Long: "Deploy napctl serve (3 replicas, a NodePort Service, and an Ingress with --ingress-class),\n" +
			"probe every path from where this runs — the ClusterIP, a node's NodePort, the ingress —\n" +
			"and restart it --rounds times as a rollout does: a new pod ready, then an old one deleted\n" +
			"(a lone deletion in a quiet cluster understates the tail). A deleted pod keeps serving\n" +
			"through a long preStop hold and says in each answer how long ago its termination began:\n" +
			"the last answer on a path is that path's tail. With --lb it also creates a Service of type\n" +
			"LoadBalancer per externalTrafficPolicy named, probes its address, and adds to each round a\n" +
			"scale-down to one replica and back: only a pod that leaves its node without one shows how\n" +
			"long a load balancer that health-checks nodes keeps sending there. Over the rounds it reports p50 / p99 / max\n" +
			"per path and recommends the preStop delay (the longest tail plus --margin, whole seconds)\n" +
			"and the grace period (the delay plus --drain), as napctl inject and napctl install flags.\n\n" +
			"It creates namespace -n (default nap-calibrate) and deletes it at the end, also on\n" +
			"Ctrl-C (then exit 130); it refuses a namespace it did not create unless\n" +
			"--use-existing-namespace. Exit 2 when it cannot calibrate.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(cmd, f.output, "text", "json"); err != nil {
				return err
			}
			return run(cmd, streams, f)
		},
	}
	fl := cmd.Flags()
	o := &f.opts
	f.cluster.Flags(fl)
	fl.StringVarP(&o.Namespace, "namespace", "n", calibrate.DefaultNamespace, "the namespace to create, calibrate in, and delete")
	fl.BoolVar(&o.UseExisting, "use-existing-namespace", false, "calibrate in an existing namespace (deleting only calibrate's own objects there)")
	fl.StringVar(&o.Image, "image", install.DefaultImage, "the napctl image (it runs napctl serve)")
	fl.Int32Var(&o.Replicas, "replicas", calibrate.DefaultReplicas, "replicas of napctl serve")
	fl.IntVar(&o.Rounds, "rounds", calibrate.DefaultRounds, "rolling restarts, one after another (each replaces every replica: a sample per pod)")
	fl.Float64Var(&o.Rate, "rate", calibrate.DefaultRate, "requests per second on each path")
	cli.DurationFlag(fl, &o.Hold, "hold", calibrate.DefaultHold, "how long a deleted pod keeps serving (its preStop hold): the longest tail it can measure")
	cli.DurationFlag(fl, &o.Quiet, "quiet", calibrate.DefaultQuiet, "a deleted pod's tail is final once it left every EndpointSlice and nothing reached it for this long")
	fl.StringVar(&o.Paths.NodeAddress, "nodeport", "", "the node address of the NodePort path (default: the first node's InternalIP; - for none)")
	fl.StringVar(&o.Paths.IngressClass, "ingress-class", "", "also create an Ingress of this class and probe it")
	fl.StringVar(&o.Paths.IngressURL, "ingress-url", "", "where that ingress controller answers (http://ADDR); calibrate probes ADDR/"+calibrate.Name)
	fl.StringVar(&o.Paths.Gateway, "gateway", "", "also attach an HTTPRoute to this Gateway (NAMESPACE/NAME) and probe it")
	fl.StringVar(&o.Paths.GatewayURL, "gateway-url", "", "where that Gateway answers (http://ADDR); calibrate probes ADDR/"+calibrate.Name)
	fl.StringVar(&o.Paths.DNS, "dns", "", "also measure the path through a headless Service's name, asking this cluster DNS (ADDR:PORT: the ClusterIP of kube-system/kube-dns, port 53) at each new connection")
	fl.StringVar(&o.Paths.ClusterDomain, "cluster-domain", calibrate.DefaultClusterDomain, "the cluster's DNS domain, for --dns")
	fl.StringVar(&f.lbs, "lb", "", "also measure load balancer paths: local, cluster or local,cluster (their externalTrafficPolicy)")
	cli.Complete(cmd, "lb", "local", "cluster", "local,cluster")
	fl.StringToStringVar(&o.Paths.LBAnnotations, "lb-annotation", nil, "annotations for the load balancer Services (KEY=VALUE,...): the cloud's settings")
	fl.StringToStringVar(&o.Paths.PodLBAnnotations, "lb-pods-annotation", nil, "also measure a load balancer whose targets are the pods, its Service with these annotations (KEY=VALUE,...): those that make the cloud send to pod addresses (an NLB: service.beta.kubernetes.io/aws-load-balancer-nlb-target-type=ip; an ALB, with --lb-pods-ingress-class alb: alb.ingress.kubernetes.io/target-type=ip) and its settings")
	fl.StringVar(&o.Paths.PodLBIngressClass, "lb-pods-ingress-class", "", "make that load balancer an Ingress of this class naming its Service (of type ClusterIP), the annotations on both: an application load balancer, such as an AWS ALB (alb); without it, the Service is of type LoadBalancer")
	fl.DurationVar(&o.Paths.LBWait, "lb-wait", calibrate.DefaultLBWait, "how long a load balancer may take to get an address and answer")
	cli.DurationFlag(fl, &o.AcceptGrace, "accept-grace", calibrate.DefaultAccept, "the longest grace period you would accept: a longer recommendation comes with advice")
	cli.DurationFlag(fl, &o.Margin, "margin", calibrate.DefaultMargin, "added to the longest tail for the recommended delay")
	cli.DurationFlag(fl, &o.Drain, "drain", calibrate.DefaultDrain, "the grace period beyond the delay that the recommendation leaves for draining")
	fl.StringVar(&f.save, "save", "", "also write what was measured, per path, to this file ("+traffic.CalibrationKind+" "+traffic.CalibrationAPIVersion+"): napctl lint --calibration holds each workload's delay to its own paths' tails")
	fl.BoolVar(&f.store, "store", false, "also keep what was measured in the cluster (ConfigMap "+kube.CalibrationConfigMap+" in --nap-namespace): nap's webhook then gives each pod the wait of the slowest path that reaches it")
	fl.StringVar(&f.storeNS, "nap-namespace", controller.DefaultNamespace, "the nap controller's namespace, where --store keeps the calibration")
	cli.OutputFlag(cmd, &f.output, "text", "json")
	return cmd
}

func run(cmd *cobra.Command, streams cli.IOStreams, f *flags) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	lbs, err := calibrate.ParseLoadBalancers(f.lbs)
	if err != nil {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("--lb: %w", err)}
	}
	f.opts.Paths.LoadBalancers = lbs
	if err := f.opts.Validate(); err != nil {
		return &cli.ExitError{Code: 2, Err: err}
	}
	if f.save != "" {
		// Before minutes of measuring: a directory that is not there fails now.
		if st, err := os.Stat(filepath.Dir(f.save)); err != nil || !st.IsDir() {
			return &cli.ExitError{Code: 2, Err: fmt.Errorf("--save %s: no directory %s", f.save, filepath.Dir(f.save))}
		}
	}
	cfg, err := cli.RESTConfig(f.cluster)
	if err != nil {
		return &cli.ExitError{Code: 2, Err: err}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return &cli.ExitError{Code: 2, Err: err}
	}
	if f.store {
		// Before minutes of measuring: nap's namespace must be there.
		if _, err := cs.CoreV1().Namespaces().Get(ctx, f.storeNS, metav1.GetOptions{}); err != nil {
			return &cli.ExitError{Code: 2, Err: fmt.Errorf("--store: nap's namespace %s (--nap-namespace): %w", f.storeNS, err)}
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM) // Ctrl-C: clean up, then exit
	defer stop()
	f.opts.Log = func(format string, args ...any) {
		cli.Warn(cmd, streams, format, args...)
	}
	rep, err := calibrate.Run(ctx, cs, f.opts)
	if err != nil && ctx.Err() != nil {
		// Interrupted: Run has deleted what it created; 130 as a shell reports SIGINT.
		return &cli.ExitError{Code: 130, Err: fmt.Errorf("interrupted; what calibrate created in namespace %s is deleted", f.opts.Namespace)}
	}
	var pull *calibrate.ImagePullError
	if errors.As(err, &pull) {
		err = fmt.Errorf("%w; what calibrate created in namespace %s is deleted.\n%s", err, f.opts.Namespace, cli.ImageHint("--image"))
	}
	if err != nil {
		return &cli.ExitError{Code: 2, Err: err}
	}
	if f.save != "" {
		b, err := json.MarshalIndent(rep.Stored, "", "  ")
		if err == nil {
			err = fsutil.WriteFileAtomic(f.save, append(b, '\n'), 0o644)
		}
		if err != nil {
			return &cli.ExitError{Code: 2, Err: fmt.Errorf("--save: %w", err)}
		}
	}
	if f.store {
		if err := controller.StoreCalibration(ctx, cs, f.storeNS, &rep.Stored); err != nil {
			return &cli.ExitError{Code: 2, Err: fmt.Errorf("--store: %w", err)}
		}
		f.opts.Log("kept the calibration in ConfigMap %s/%s: nap's webhook gives each new pod the wait of its own paths", f.storeNS, kube.CalibrationConfigMap)
	}
	var out bytes.Buffer
	if f.output == "json" {
		e := json.NewEncoder(&out)
		e.SetIndent("", "  ")
		err = e.Encode(rep)
	} else {
		text(&out, rep, f.opts)
	}
	if err != nil {
		return err
	}
	_, err = streams.Out.Write(out.Bytes())
	return err
}

func text(b *bytes.Buffer, r *calibrate.Report, o calibrate.Options) {
	by := map[string]int{}
	for _, rd := range r.Rounds {
		by[rd.Disruption]++
	}
	var kinds []string
	for _, d := range []string{calibrate.RollingRestart, calibrate.ScaleDown} {
		if by[d] > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", d, by[d]))
		}
	}
	fmt.Fprintf(b, "%d pods replaced in %d rounds (%s); traffic tail after termination began, per path:\n", len(r.Rounds), o.Rounds, strings.Join(kinds, ", "))
	for _, p := range r.Paths {
		fmt.Fprintf(b, "  %-10s %-40s p50 %5.2fs  p99 %5.2fs  max %5.2fs  (%d samples; %d of %d requests failed)\n",
			p.Path.Name, p.Path.URL, p.P50, p.P99, p.Max, p.Samples, p.Failed, p.Requests)
	}
	for _, rd := range r.Rounds {
		if rd.Censored {
			fmt.Fprintf(b, "  pod %s still answered when its %v hold ended: its tails are at least the figures above (--hold longer)\n", rd.Pod, o.Hold)
		}
	}
	fmt.Fprintf(b, "recommended preStop delay %v (the longest tail, on %s, plus %v), grace period %v (plus %v to drain)\n",
		r.Delay, r.Longest, o.Margin, r.Grace, o.Drain)
	fmt.Fprintf(b, "  napctl inject --delay %v --grace-extra %v -f MANIFESTS\n", r.Delay, o.Drain)
	fmt.Fprintf(b, "  napctl install --delay %v\n", r.Delay)
	ad := r.Adaptive.Wait()
	fmt.Fprintf(b, "or nap's adaptive wait: at least %v (the fixed delay), then until no new connection for %v, at most %v (room for a slower path); grace period %v\n",
		ad.Min, ad.Quiet, ad.Delay, r.Adaptive.Grace)
	fmt.Fprintf(b, "  napctl inject --wait adaptive --min %v --quiet %v --delay %v --grace-extra %v -f MANIFESTS\n", ad.Min, ad.Quiet, ad.Delay, o.Drain)
	fmt.Fprintf(b, "  napctl install --wait adaptive --min %v --quiet %v --max %v\n", ad.Min, ad.Quiet, ad.Delay)
	if r.Advice != "" {
		fmt.Fprintf(b, "note: %s\n", r.Advice)
	}
	var failed []string
	for _, p := range r.Paths {
		if p.Failed > 0 {
			failed = append(failed, fmt.Sprintf("%s %d", p.Path.Name, p.Failed))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(b, "note: requests failed during calibration (%s): a path dropped traffic even to pods that kept serving\n", strings.Join(failed, ", "))
	}
}
