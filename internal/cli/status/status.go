package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/kube"
	nlint "github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/live"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/policyreport/writer"
	"github.com/nap-k8s/nap/scope"
	nstatus "github.com/nap-k8s/nap/status"
	"github.com/nap-k8s/nap/traffic"
)

type flags struct {
	cluster   cli.Cluster
	namespace string
	// all: -A, every namespace; without it and -n, the context's namespace.
	all    bool
	output string
	failOn string
	// calibration: --calibration's file.
	calibration string
}

// outputs are status's -o: the report as text, JSON or YAML, or the policy reports the
// controller's Reporter writes.
var outputs = []string{"text", "json", "yaml", "openreports", "policyreport"}

// NewCommand returns the status command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "status [--kubeconfig FILE] [--context NAME] [-n NAMESPACE | -A] [-o text|json|yaml|openreports|policyreport] [--fail-on unprotected]",
		Short: "Show which Service-backed workloads terminate without dropping requests",
		Long: "For every workload a Service sends traffic to (the context's namespace, -n, or every\n" +
			"namespace with -A, as kubectl reads them): whether its\n" +
			"pods terminate safely (a preStop delay that fits the grace period, a readiness probe,\n" +
			"a hook that can run), by which means (native sleep, nap binary, nap webhook, their own\n" +
			"hook), the reasons of every unprotected one, its pods' FailedPreStopHook events, and\n" +
			"what its terminations said as nap's controller counted them (each one's verdict:\n" +
			"quiet, sparse, late, blind, cut), or \"not observed\" where no nap binary runs the delay.\n" +
			"Works with or without nap's controller installed; it only reads.\n\n" +
			"Exit status: 0, or 1 with --fail-on unprotected when a workload is unprotected; 2 when\n" +
			"the cluster cannot be read.",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{cli.VerdictAnnotation: "1"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(cmd, f.output, outputs...); err != nil {
				return err
			}
			return run(cmd, streams, f)
		},
	}
	f.cluster.Flags(cmd.Flags())
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "this namespace (default: the context's, as kubectl)")
	cmd.Flags().BoolVarP(&f.all, "all-namespaces", "A", false, "every namespace")
	cli.OutputFlag(cmd, &f.output, outputs...)
	cmd.Flags().StringVar(&f.failOn, "fail-on", "", "exit 1 when this is found: unprotected")
	cli.Complete(cmd, "fail-on", "unprotected")
	cli.CalibrationFlag(cmd.Flags(), &f.calibration)
	return cmd
}

func run(cmd *cobra.Command, streams cli.IOStreams, f *flags) error {
	if f.failOn != "" && f.failOn != "unprotected" {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("--fail-on %q: want unprotected", f.failOn)}
	}
	if f.all && cmd.Flags().Changed("namespace") {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("-n %s and -A: one namespace, or every one", f.namespace)}
	}
	cal, err := cli.ReadCalibration(f.calibration)
	if err != nil {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("--calibration: %w", err)}
	}
	in, err := gather(cmd, streams, f)
	if err != nil {
		return &cli.ExitError{Code: 2, Err: err}
	}
	if cal != nil {
		in.Lint.Calibration = cal
	}
	r := nstatus.Compute(in)
	var out bytes.Buffer // nothing half-written: render fully, then write
	switch f.output {
	case "json":
		err = nstatus.JSON(&out, r)
	case "yaml":
		err = nstatus.YAML(&out, r)
	case "openreports": // what the controller's Reporter writes, one Report per namespace
		err = nstatus.PolicyReports(&out, r, policyreport.OpenReports)
	case "policyreport":
		err = nstatus.PolicyReports(&out, r, policyreport.WGPolicy)
	default:
		err = nstatus.Text(&out, r)
	}
	if err != nil {
		return err
	}
	if _, err := streams.Out.Write(out.Bytes()); err != nil {
		return err
	}
	if f.failOn == "unprotected" && r.Unprotected > 0 {
		return &cli.ExitError{Code: 1}
	}
	return nil
}

// gather reads what status judges from the cluster: its versions, the live objects,
// the opted-in namespaces, whether nap's webhook is registered, FailedPreStopHook events.
// The reads do not depend on one another, so they go at once.
func gather(cmd *cobra.Command, streams cli.IOStreams, f *flags) (nstatus.Input, error) {
	var in nstatus.Input
	cfg, err := cli.RESTConfig(f.cluster)
	if err != nil {
		return in, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return in, err
	}
	if err := cli.Reach(cfg); err != nil { // one word, not one for each read below
		return in, err
	}
	if !f.all && f.namespace == "" { // the context's, "default" where it names none, as kubectl
		if f.namespace, _, err = f.cluster.ClientConfig().Namespace(); err != nil {
			return in, err
		}
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	var errVersions, errObjects, errNamespaces, errEvents error
	var warning string
	if f.namespace == "" {
		wg.Go(func() {
			var v kube.Version
			v, in.Lint.Nodes, errVersions = cli.ClusterVersionsOf(cfg)
			in.Lint.KubeVersion = &v
		})
		wg.Go(func() { in.Objects, errObjects = live.Read(ctx, cfg, f.namespace) })
	} else {
		// One namespace: the nodes (5,000 of them at the tested limits) only when one
		// of its workloads uses the native sleep, the one check that reads them.
		wg.Go(func() {
			if in.Objects, errObjects = live.Read(ctx, cfg, f.namespace); errObjects != nil {
				return
			}
			var v kube.Version
			if nlint.NeedsKubelets(in.Objects) {
				v, in.Lint.Nodes, errVersions = cli.ClusterVersionsOf(cfg)
			} else {
				v, errVersions = cli.ServerVersion(cfg)
			}
			in.Lint.KubeVersion = &v
		})
	}
	wg.Go(func() { in.NamespaceLabels, errNamespaces = namespaceLabels(ctx, cs, f.namespace) })
	wg.Go(func() { in.WebhookInstalled, in.Scope, warning = installed(ctx, cs) })
	wg.Go(func() { in.Events, errEvents = failedPreStopHooks(ctx, cs, f.namespace) })
	var terminationsWarning string
	wg.Go(func() { in.Terminations, terminationsWarning = terminations(ctx, cfg, cs, f.namespace) })
	var kept *traffic.Calibration
	var errKept error
	if f.calibration == "" { // none named: the one kept in the cluster, if any
		wg.Go(func() { kept, errKept = cli.KeptCalibration(ctx, cfg) })
	}
	wg.Wait()
	if errKept != nil { // as the controller does: the fleet's waits, and a word
		cli.Warn(cmd, streams, "not holding delays to a calibration: %v", errKept)
	}
	if kept != nil {
		in.Lint.Calibration = kept
	}
	var unread live.Unread
	if errors.As(errObjects, &unread) { // the front doors of kinds it may not list: said, not fatal
		cli.Warn(cmd, streams, "%v", unread)
		errObjects = nil
	}
	for _, w := range []string{warning, terminationsWarning} {
		if w != "" {
			cli.Warn(cmd, streams, "%s", w)
		}
	}
	return in, errors.Join(errVersions, errObjects, errNamespaces, errEvents)
}

// namespaceLabels are the labels of the namespace, or of every namespace that carries
// one of nap's labels ("": all of them).
func namespaceLabels(ctx context.Context, cs kubernetes.Interface, namespace string) (map[string]map[string]string, error) {
	labels := map[string]map[string]string{}
	if namespace != "" {
		// One namespace: its own labels, not a list of every labelled one.
		ns, err := cs.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		switch {
		case err == nil:
			labels[ns.Name] = ns.Labels
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
		}
		return labels, nil
	}
	for _, key := range []string{scope.InjectLabel, scope.Label} {
		nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: key})
		if err != nil {
			return nil, fmt.Errorf("listing the namespaces labelled %s: %w", key, err)
		}
		for _, ns := range nss.Items {
			labels[ns.Name] = ns.Labels
		}
	}
	return labels, nil
}

// installed tells whether nap's webhook is registered and the scope its controller runs
// with; warning says what could not be read (and what was taken instead).
func installed(ctx context.Context, cs kubernetes.Interface) (bool, scope.Scope, string) {
	mwc, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, controller.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		s, warning := installedScope(ctx, cs, mwc)
		return true, s, warning
	case !apierrors.IsNotFound(err):
		return false, "", fmt.Sprintf("cannot tell whether nap's webhook is installed (%v): counting it as not", err)
	}
	return false, "", ""
}

// failedPreStopHooks are the kubelet's FailedPreStopHook events of pods in namespace
// ("": every namespace).
func failedPreStopHooks(ctx context.Context, cs kubernetes.Interface, namespace string) ([]nstatus.Event, error) {
	events, err := cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedPreStopHook"})
	if err != nil {
		return nil, fmt.Errorf("listing FailedPreStopHook events: %w", err)
	}
	var out []nstatus.Event
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != "Pod" {
			continue
		}
		t := e.LastTimestamp.Time
		if t.IsZero() {
			t = e.EventTime.Time
		}
		out = append(out, nstatus.Event{Namespace: e.Namespace, Pod: e.InvolvedObject.Name, Message: e.Message, Time: t})
	}
	return out, nil
}

// terminations are what nap's controller counted of each workload's terminations in
// namespace ("": every namespace), from the terminations results of its reports
// (policyreport.TerminationsPolicy), by kube.Workload.String(); warning says what could
// not be read. None where the cluster serves neither report format.
func terminations(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, namespace string) (map[string]policyreport.Terminations, string) {
	f, ok, err := writer.Detect(cs.Discovery())
	if err != nil {
		return nil, fmt.Sprintf("cannot read the terminations nap's controller counted (%v)", err)
	}
	if !ok {
		return nil, ""
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Sprintf("cannot read the terminations nap's controller counted (%v)", err)
	}
	l, err := dc.Resource(f.GroupVersion.WithResource(f.Resource)).Namespace(namespace).List(ctx,
		metav1.ListOptions{LabelSelector: policyreport.ManagedLabel + "=" + policyreport.ManagedBy})
	if err != nil {
		return nil, fmt.Sprintf("cannot read the terminations nap's controller counted: listing %s: %v", f.Resource, err)
	}
	out := map[string]policyreport.Terminations{}
	for i := range l.Items {
		if l.Items[i].GetName() != policyreport.Name {
			continue
		}
		results, err := policyreport.Parse(&l.Items[i])
		if err != nil {
			return out, fmt.Sprintf("cannot read the terminations nap's controller counted: %v", err)
		}
		for _, r := range results {
			if t, ok := policyreport.TerminationsOf(r); ok {
				out[kube.Workload{Kind: r.Workload.Kind, Namespace: l.Items[i].GetNamespace(), Name: r.Workload.Name}.String()] = t
			}
		}
	}
	return out, ""
}

// installedScope is the scope nap's controller runs with: its Deployment's --policy,
// found beside the Service the webhook calls. Unreadable: opt-in, and a warning.
func installedScope(ctx context.Context, cs kubernetes.Interface, mwc *admissionregistrationv1.MutatingWebhookConfiguration) (scope.Scope, string) {
	for _, h := range mwc.Webhooks {
		svc := h.ClientConfig.Service
		if svc == nil {
			continue
		}
		d, err := cs.AppsV1().Deployments(svc.Namespace).Get(ctx, controller.Name, metav1.GetOptions{})
		if err != nil {
			return scope.OptIn, fmt.Sprintf("cannot read nap's controller (%v): taking its policy as %s", err, scope.OptIn)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if s, ok := scope.FromArgs(append(slices.Clone(c.Command), c.Args...)); ok {
				return s, ""
			}
		}
		return scope.OptIn, ""
	}
	return scope.OptIn, ""
}
