package report

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// judge is a namespace's findings: its pods' (s), then its FailedPreStopHook events',
// by workload, reason and cause.
func (r *Reporter) judge(ctx context.Context, s *nsScan) ([]Finding, error) {
	byKey := map[findingKey]*Finding{}
	for _, f := range s.finds {
		addFinding(byKey, findingKey{workload: f.workload, reason: f.reason}, f.pod, f.message)
	}
	var events corev1.EventList
	if err := r.Client.List(ctx, &events, client.InNamespace(s.namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for _, e := range events.Items {
		if e.Reason != "FailedPreStopHook" || e.InvolvedObject.Kind != "Pod" {
			continue
		}
		w := kube.WorkloadOfName(e.InvolvedObject.Namespace, e.InvolvedObject.Name)
		if p, err := r.pod(ctx, e.InvolvedObject.Namespace, e.InvolvedObject.Name); err != nil {
			return nil, err
		} else if p != nil {
			w = kube.WorkloadOf(p) // the pod still runs: its owner, not a guess from its name
		}
		// The kubelet's own event says nothing more: then the cause is what the hook
		// runs, from a live pod.
		kind := s.hookKinds[w]
		cause, why := hook.CauseLabel(e.Message, kind), hook.Cause(e.Message)
		if hook.Bare(e.Message) {
			why = "the kubelet gives no reason"
			if kind != hook.None {
				why += "; the workload's hook is of kind " + string(kind)
			}
		}
		addFinding(byKey, findingKey{workload: w, reason: FailedPreStopHook, cause: cause}, e.InvolvedObject.Name, "preStop hook failed ("+cause+"): "+why)
	}
	out := make([]Finding, 0, len(byKey))
	for _, f := range byKey {
		slices.Sort(f.Pods)
		out = append(out, *f)
	}
	return sortFindings(out), nil
}

// scanEnv is what every namespace's sync reads the same: the nodes' kubelets.
type scanEnv struct {
	nodes     map[string]kube.Node
	apiserver kube.Version
}

// environment is the nodes' kubelets, read once until a node's kubelet changes.
func (r *Reporter) environment(ctx context.Context) (*scanEnv, error) {
	r.mu.Lock()
	e := r.env
	r.mu.Unlock()
	if e != nil {
		return e, nil
	}
	var nodeList corev1.NodeList
	if err := r.Client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	e = &scanEnv{nodes: make(map[string]kube.Node, len(nodeList.Items)), apiserver: r.Kube} // unknown: no older than the newest kubelet
	for i := range nodeList.Items {
		if n, err := kube.NodeOf(&nodeList.Items[i]); err == nil {
			e.nodes[n.Name] = n
			if r.Kube == (kube.Version{}) && e.apiserver.Less(n.Kubelet) {
				e.apiserver = n.Kubelet
			}
		}
	}
	r.mu.Lock()
	r.env = e
	r.mu.Unlock()
	return e, nil
}

// podsIn returns a namespace's pods: from the informer's namespace index (the cache
// holds summaries, see podSummary) with Informers, else listed from Client.
func (r *Reporter) podsIn(ctx context.Context, ns string) ([]*podSummary, error) {
	if r.Informers == nil {
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out := make([]*podSummary, len(list.Items))
		for i := range list.Items {
			out[i] = summaryOf(&list.Items[i])
		}
		return out, nil
	}
	idx, err := r.podIndex(ctx)
	if err != nil {
		return nil, err
	}
	items, err := idx.ByIndex(toolscache.NamespaceIndex, ns)
	if err != nil {
		return nil, err
	}
	out := make([]*podSummary, 0, len(items))
	for _, o := range items {
		if s := asSummary(o); s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// pod returns a pod as the Reporter reads it, or nil when it is gone.
func (r *Reporter) pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	if r.Informers == nil {
		var p corev1.Pod
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return &p, nil
	}
	idx, err := r.podIndex(ctx)
	if err != nil {
		return nil, err
	}
	o, ok, err := idx.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil, err
	}
	s := asSummary(o)
	if s == nil {
		return nil, nil
	}
	var p corev1.Pod
	s.fill(&p)
	return &p, nil
}

// asSummary is a cached pod as a summary: the cache's own, or made from a full pod
// when the cache was set up without the transform of CacheByObject (controller.CacheOptions).
func asSummary(o any) *podSummary {
	switch o := o.(type) {
	case *podSummary:
		return o
	case *corev1.Pod:
		return summaryOf(o)
	}
	return nil
}

// podIndex is the pod informer's store, indexed by namespace.
func (r *Reporter) podIndex(ctx context.Context) (toolscache.Indexer, error) {
	r.mu.Lock()
	idx := r.pods
	r.mu.Unlock()
	if idx != nil {
		return idx, nil
	}
	inf, err := r.Informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	i, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the pod informer (%T) has no indexer", inf)
	}
	r.mu.Lock()
	r.pods = i.GetIndexer()
	r.mu.Unlock()
	return i.GetIndexer(), nil
}

// nsScan is what one namespace's pods showed.
type nsScan struct {
	namespace   string
	finds       []podFinding
	notInjected []corev1.Pod
	hookKinds   map[kube.Workload]hook.Kind
	// live is the live wait of each workload whose pods' hooks read it (Reporter.Live),
	// by kube.LiveKey.
	live map[string]nap.Request
}

type podFinding struct {
	workload     kube.Workload
	reason       Reason
	pod, message string
}

// nsView is one namespace as a scan reads it from the caches: its Services and front
// doors, each listed once and only when a pod needs them.
type nsView struct {
	r      *Reporter
	ctx    context.Context
	ns     *corev1.Namespace
	svcs   []corev1.Service
	listed bool
	fronts kube.Frontends // the Services its Ingresses and Gateway API routes name
	read   bool
}

// services are the namespace's Services, listed once.
func (v *nsView) services() ([]corev1.Service, error) {
	if !v.listed {
		var list corev1.ServiceList
		if err := v.r.Client.List(v.ctx, &list, client.InNamespace(v.ns.Name), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		v.svcs, v.listed = list.Items, true
	}
	return v.svcs, nil
}

// selecting is the first Service that selects p (scope.Input.Selecting).
func (v *nsView) selecting(p *corev1.Pod) (string, bool, error) {
	svcs, err := v.services()
	if err != nil {
		return "", false, err
	}
	name, found := scope.SelectingService(svcs, p.Labels)
	return name, found, nil
}

// reaching are the Services that select p and the front doors that name them (read
// once): the paths that reach it.
func (v *nsView) reaching(p *corev1.Pod) ([]*corev1.Service, func(service string) kube.Fronts, error) {
	svcs, err := v.services()
	if err != nil {
		return nil, nil, err
	}
	mine := scope.Selecting(svcs, p.Labels)
	if len(mine) > 0 && !v.read && v.r.Fronts != nil {
		if v.fronts, err = v.r.Fronts(v.ctx, v.ns.Name); err != nil {
			return nil, nil, err
		}
		v.read = true
	}
	return mine, v.fronts.Of, nil
}

// scanNamespace judges one namespace's pods: a pod with a hook by lint's termination
// checks (hooked), one without by whether the webhook should have given it one
// (unhooked).
func (r *Reporter) scanNamespace(ctx context.Context, ns *corev1.Namespace, env *scanEnv) (*nsScan, error) {
	pods, err := r.podsIn(ctx, ns.Name)
	if err != nil {
		return nil, err
	}
	out := &nsScan{namespace: ns.Name}
	v := &nsView{r: r, ctx: ctx, ns: ns}
	var cal *traffic.Calibration
	if r.Calibration != nil {
		cal = r.Calibration()
	}
	var pod corev1.Pod // each summary in turn: see podSummary.fill
	p := &pod
	for _, sum := range pods {
		sum.fill(p)
		w := kube.WorkloadOf(p)
		h, _ := hook.First(p.Spec)
		if h.Kind != hook.None {
			if out.hookKinds == nil {
				out.hookKinds = map[kube.Workload]hook.Kind{}
			}
			out.hookKinds[w] = h.Kind
		}
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if h.Kind != hook.None {
			err = r.hooked(v, env, cal, p, h, w, out)
			if err == nil && r.Live && h.Kind == hook.Nap && h.Known && h.Wait.Live && !sum.ownDelay {
				var got wait.Wait
				if got, err = r.liveWait(v, cal, p, h); err == nil {
					out.addLive(w, got)
				}
			}
		} else {
			err = r.unhooked(v, p, w, out)
		}
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return out, nil
}

// hooked judges a pod whose hook is h by lint's termination checks, on the pod as it
// runs: its node's kubelet, the calibration and the fleet's waits kept in the cluster,
// and the paths that reach it.
func (r *Reporter) hooked(v *nsView, env *scanEnv, cal *traffic.Calibration, p *corev1.Pod, h hook.Hook, w kube.Workload, out *nsScan) error {
	opts := lint.Options{KubeVersion: &env.apiserver, Calibration: cal, Waits: r.Waits}
	if n, ok := env.nodes[p.Spec.NodeName]; ok {
		opts.Nodes = []kube.Node{n}
	}
	lp := lint.Pod{Namespace: p.Namespace, Name: p.Name, Spec: p.Spec}
	if h.Known && !h.Stops && (cal != nil || h.Adaptive()) {
		// The paths that reach it, read only where a path check can find something: a
		// calibration to hold a delay to, an adaptive wait.
		var err error
		if lp.Services, lp.Fronts, err = v.reaching(p); err != nil {
			return err
		}
	}
	for _, f := range lint.CheckPod(lp, opts, reporterChecks...) {
		reason := reasonOfCheck[f.ID]
		out.finds = append(out.finds, podFinding{w, reason, p.Name, f.Message + rollRemedy[reason]})
	}
	return nil
}

// unhooked judges a pod with no hook: NotInjected where the webhook gives such a pod
// one (scope.Decide), Refused where it leaves it unchanged on purpose.
func (r *Reporter) unhooked(v *nsView, p *corev1.Pod, w kube.Workload, out *nsScan) error {
	in := scope.Input{Installed: r.Scope, Excluded: r.Exclude[p.Namespace], NamespaceLabels: v.ns.Labels,
		Pod:       scope.Pod{Labels: p.Labels, RestartPolicy: p.Spec.RestartPolicy},
		Selecting: func() (string, bool, error) { return v.selecting(p) }}
	for _, o := range p.OwnerReferences {
		in.Pod.OwnerKinds = append(in.Pod.OwnerKinds, o.Kind)
	}
	d, err := scope.Decide(in)
	if err != nil {
		return err
	}
	// Under audit nothing is injected by design: that is reported at admission.
	if d.Inject && r.Refusal != nil {
		why, err := r.Refusal(v.ctx, p.Namespace, p.Name)
		if err != nil {
			return err
		}
		if why != "" {
			out.finds = append(out.finds, podFinding{w, Refused, p.Name, "pods have no preStop delay: nap's webhook leaves them unchanged (" + why + "); fix that, then roll the workload"})
			return nil
		}
	}
	if d.Inject {
		out.finds = append(out.finds, podFinding{w, NotInjected, p.Name, fmt.Sprintf("pods have no preStop delay although nap's webhook gives them one (%s): admitted while the webhook was down, unreachable or not yet trusted; roll the workload to inject them", d)})
		out.notInjected = append(out.notInjected, *p.DeepCopy()) // p is the next pod's too
	}
	return nil
}
