package lint

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/nap-k8s/nap/drain"
	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"

	corev1 "k8s.io/api/core/v1"
)

// The termination path: readiness, the preStop delay, the grace period, native sleep.
func terminationChecks() []Check {
	return []Check{
		Check{ID: NoReadinessProbe, Title: "A serving container behind a Service has no readinessProbe", Severity: Error, Run: noReadinessProbe},
		Check{ID: NoPreStopDelay, Title: "A workload behind a Service has no preStop delay", Severity: Error, Run: noPreStopDelay},
		Check{ID: PreStopNeedsShell, Title: "A preStop hook needs a shell or a sleep binary", Severity: Warning, Run: preStopNeedsShell},
		Check{ID: GracePeriodTooShort, Title: "The grace period does not cover the preStop delay and a drain", Severity: Error, Run: gracePeriodTooShort},
		Check{ID: NativeSleepExceedsGrace, Title: "A native sleep is longer than the grace period", Severity: Error, Run: nativeSleepExceedsGrace},
		Check{ID: NativeSleepUnsupported, Title: "A native sleep needs a newer Kubernetes", Severity: Error, Run: nativeSleepUnsupported},
		Check{ID: GRPCReadiness, Title: "A gRPC container's readiness does not ask its health service", Severity: Warning, Run: grpcReadiness},
		Check{ID: DelayBelowPath, Title: "A preStop delay is shorter than the calibrated tail of a path that reaches the pod", Severity: Warning, Run: delayBelowPath},
		Check{ID: AdaptiveMissesPool, Title: "An adaptive wait watches new connections alone where a client that pools its connections reaches the pod", Severity: Warning, Run: adaptiveMissesPool},
		Check{ID: MeshProxyExitsFirst, Title: "A mesh's proxy sidecar stops serving before the preStop delay ends", Severity: Warning, Run: meshProxyExitsFirst},
	}
}

// meshProxyExitsFirst: the pod runs a mesh's proxy (Linkerd, Istio's classic sidecar)
// that stops taking requests when the pod is told to stop, before the app's preStop
// delay ends (kube.MeshNeed): the delay, or the one nap would add (nap's default), then
// holds nothing for the requests that come through the proxy.
func meshProxyExitsFirst(_ *Context, w *Workload) []Finding {
	routed := w.Routed()
	if len(routed) == 0 {
		return nil
	}
	d, has := time.Duration(0), false
	for _, r := range routed {
		if h := hook.Of(r.Container); h.Known && h.Delay() > 0 {
			d, has = max(d, h.Delay()), true
		}
	}
	if !has {
		d = nap.Default // what napctl inject and the webhook give it
	}
	need, ok := kube.MeshNeed(w.Obj.PodAnnotations(), w.Labels, &w.PodSpec, d)
	if !ok {
		return nil
	}
	msg := need.Why
	if !has {
		msg += " (the delay nap would add: the pod has none yet)"
	}
	return []Finding{{Message: msg, Hint: need.Fix}}
}

// adaptiveMissesPool: a container behind a Service whose preStop is nap's adaptive wait
// without the request signal, where a client that pools its connections reaches the
// pod (an application load balancer with the pods as targets: an AWS ALB in IP mode, GCP
// container-native load balancing for an Ingress): that client sends no new connection,
// so the wait ends while it still sends (traffic.Need.MissesPool; no calibration
// needed).
func adaptiveMissesPool(_ *Context, w *Workload) []Finding {
	n, ok := w.routes(nil)
	if !ok {
		return nil
	}
	return perRouted(w, func(ct corev1.Container, _ string) *Finding {
		h := hook.Of(ct)
		if !h.Known || !h.Adaptive() || !n.MissesPool(h.Wait) {
			return nil
		}
		return &Finding{
			Message: fmt.Sprintf("container %q's preStop: %s", ct.Name, n.PoolMessage()),
			Hint:    fmt.Sprintf("napctl inject -f %s --wait adaptive --%s %s (nap's webhook gives it on its own)", w.Obj.File, wait.FlagRequests, wait.Arg(wait.PooledRequests)),
		}
	})
}

// delayBelowPath: with a calibration (napctl calibrate --save), a container behind a
// Service whose preStop holds it for less than the paths reaching the pod need
// (traffic.Need.Below: the slowest measured path's tail, and the fleet's wait where a
// path is unmeasured): a load balancer or an ingress still sends to the pod after it
// stopped. The paths are the Services' (traffic.Reaching: their type,
// externalTrafficPolicy, an Ingress or a Gateway API route naming them); an adaptive
// wait holds at least its MIN, whatever the traffic.
func delayBelowPath(c *Context, w *Workload) []Finding {
	if c.Calibration == nil {
		return nil
	}
	n, ok := w.routes(c.Calibration)
	if !ok {
		return nil
	}
	return perRouted(w, func(ct corev1.Container, _ string) *Finding {
		h := hook.Of(ct)
		if h.Kind == hook.None || !h.Known || h.Stops {
			return nil // no delay, or one not known: no-prestop-delay and its kin say so
		}
		short, below := n.Below(h.Wait, c.Waits.Wait(h.Wait.Kind))
		if !below {
			return nil
		}
		flag, what := "--delay", fmt.Sprintf("holds it %v", short.Holds)
		if h.Adaptive() {
			flag = "--wait adaptive --min"
			what = fmt.Sprintf("holds it at least %v (the adaptive wait's MIN)", short.Holds)
		}
		hint := fmt.Sprintf("napctl inject -f %s %s %ds (and a grace period to cover it)", w.Obj.File, flag, int(short.Need.Seconds()))
		if short.Remedy != "" {
			hint += ", or " + short.Remedy
		}
		return &Finding{Message: fmt.Sprintf("container %q's preStop %s, but %s: it needs %v", ct.Name, what, short.Why, short.Need), Hint: hint}
	})
}

// grpcReadiness: a Service port that speaks gRPC (appProtocol grpc or
// kubernetes.io/h2c, or named grpc or grpc-*) served by a container whose readiness
// probe is neither grpc: nor exec (grpc_health_probe): a tcpSocket or httpGet probe
// does not see the health service turn NOT_SERVING while the server drains
// (drain/grpcdrain), so the pod stays in the Service while it stops.
func grpcReadiness(_ *Context, w *Workload) []Finding {
	var grpcPorts []streamPort
	for _, p := range streamPorts(w) {
		if p.protocol == StreamGRPC {
			grpcPorts = append(grpcPorts, p)
		}
	}
	if len(grpcPorts) == 0 {
		return nil
	}
	return perContainer(w, servingContainers(w.PodSpec), func(c corev1.Container) *Finding {
		sp, port, ok := streamsOf(grpcPorts, c)
		if !ok {
			return nil
		}
		served, svcName := fmt.Sprint(port), sp.service
		r := c.ReadinessProbe
		if r == nil || r.GRPC != nil || r.Exec != nil {
			return nil // none: no-readiness-probe says it
		}
		kind := "tcpSocket"
		if r.HTTPGet != nil {
			kind = "httpGet"
		}
		return &Finding{
			Message: fmt.Sprintf("container %q serves gRPC on port %s behind Service %s, but its readiness probe is %s: it does not see the health service turn NOT_SERVING while the server drains", c.Name, served, svcName, kind),
			Hint:    fmt.Sprintf("readinessProbe: {grpc: {port: %s}} (the standard health service; drain/grpcdrain turns it NOT_SERVING at SIGTERM)", served),
		}
	})
}

func perContainer(w *Workload, cs []corev1.Container, f func(corev1.Container) *Finding) []Finding {
	var out []Finding
	for _, c := range cs {
		if fd := f(c); fd != nil {
			fd.Container = c.Name
			fd.Line = w.ContainerLine(c.Name)
			out = append(out, *fd)
		}
	}
	return out
}

// perRouted runs f on each container a Service sends traffic to, with that Service.
func perRouted(w *Workload, f func(c corev1.Container, svc string) *Finding) []Finding {
	var cs []corev1.Container
	svcs := map[string]string{}
	for _, r := range w.Routed() {
		cs = append(cs, r.Container)
		svcs[r.Container.Name] = r.Service
	}
	return perContainer(w, cs, func(c corev1.Container) *Finding { return f(c, svcs[c.Name]) })
}

func noReadinessProbe(_ *Context, w *Workload) []Finding {
	return perRouted(w, func(c corev1.Container, svc string) *Finding {
		if c.ReadinessProbe != nil {
			return nil
		}
		return &Finding{
			Message: fmt.Sprintf("container %q serves behind Service %s but has no readinessProbe: it gets traffic before it is ready", c.Name, svc),
			Hint:    readinessHint(c),
		}
	})
}

// readinessHint says which probe to add, by what the container serves: HTTP (a port
// named http or web, or a usual HTTP port), gRPC (a port named grpc), else any probe
// that fails while the app cannot serve.
func readinessHint(c corev1.Container) string {
	for _, p := range c.Ports {
		name := strings.ToLower(p.Name)
		switch {
		case strings.HasPrefix(name, "grpc"):
			return fmt.Sprintf("add a readinessProbe: {grpc: {port: %d}} (the health service; drain/grpcdrain turns it NOT_SERVING while draining)", p.ContainerPort)
		case strings.Contains(name, "http") || strings.Contains(name, "web") || slices.Contains([]int32{80, 443, 3000, 8000, 8080, 8443}, p.ContainerPort):
			return fmt.Sprintf("add a readinessProbe: {httpGet: {path: /readyz, port: %d}}, a path that turns 503 while the app drains", p.ContainerPort)
		}
	}
	return "add a readinessProbe that fails while the app cannot serve (tcpSocket, exec of its own client, or httpGet/grpc where it serves those)"
}

func noPreStopDelay(_ *Context, w *Workload) []Finding {
	return perRouted(w, func(c corev1.Container, svc string) *Finding {
		switch h := hook.Of(c); {
		case h.Stops && h.Delay() == 0:
			return &Finding{
				Message: fmt.Sprintf("container %q's preStop hook %q begins the server's stop at once: it stops serving while Service %s may still route to it", c.Name, strings.Join(h.Command, " "), svc),
				Hint:    "wait before the stop: [\"sh\", \"-c\", \"sleep 10 && " + stopScript(h.Command) + "\"] where the image has a shell, or the server's own wait (kong quit --wait=10)",
			}
		case h.Kind != hook.None && h.Known && h.Delay() == 0 && !h.Adaptive():
			return &Finding{
				Message: fmt.Sprintf("container %q's preStop hook holds 0 s: it gets SIGTERM while Service %s may still route to it", c.Name, svc),
				Hint:    hookHint(w, c),
			}
		case h.Kind != hook.None:
			return nil
		}
		return &Finding{
			Message: fmt.Sprintf("container %q gets SIGTERM while Service %s may still route to it: no preStop delay", c.Name, svc),
			Hint:    injectHint(w),
		}
	})
}

// stopScript is a stop hook's command as the shell script that runs it: a shell's own
// script, or the command's words.
func stopScript(cmd []string) string {
	if len(cmd) >= 3 && cmd[1] == "-c" {
		return cmd[2]
	}
	return strings.Join(cmd, " ")
}

func preStopNeedsShell(c *Context, w *Workload) []Finding {
	return perContainer(w, w.PodSpec.Containers, func(ct corev1.Container) *Finding {
		d := hook.Of(ct)
		if d.Kind != hook.Shell {
			return nil
		}
		f := &Finding{
			Message: fmt.Sprintf("container %q's preStop runs %q, which the image must contain", ct.Name, path.Base(d.Command[0])),
			Hint:    hookHint(w, ct),
		}
		if shellless(ct.Image, c.Config.Shellless) {
			f.Message = fmt.Sprintf("container %q's preStop runs %q, but image %s has no shell: the hook fails (FailedPreStopHook) and there is no delay", ct.Name, path.Base(d.Command[0]), ct.Image)
			f.Severity = Error // raised below
		}
		return f
	})
}

// gracePeriodTooShort: the grace period must cover the preStop delay and a drain after it.
// A container that serves streams (a gRPC or WebSocket Service port) needs besides the
// time over which its drain spreads the streams' goodbyes (drain.DefaultStreamJitter),
// so that their clients do not all reconnect at once.
func gracePeriodTooShort(c *Context, w *Workload) []Finding {
	grace := gracePeriod(w.PodSpec)
	streams := streamPorts(w)
	return perContainer(w, w.PodSpec.Containers, func(ct corev1.Container) *Finding {
		d := hook.Of(ct)
		if !d.Known || d.Kind == hook.NativeSleep && d.Delay() > grace {
			return nil // unknown, or native-sleep-exceeds-grace says it
		}
		need, why := d.Delay()+c.DrainMargin(), fmt.Sprintf("plus %v to drain", c.DrainMargin())
		if sp, _, ok := streamsOf(streams, ct); ok {
			need += drain.DefaultStreamJitter
			why = fmt.Sprintf("plus %v to spread the close of its %s streams (Service %s) and %v to drain", drain.DefaultStreamJitter, sp.protocol, sp.service, c.DrainMargin())
		}
		if grace < need {
			return &Finding{
				Message: fmt.Sprintf("terminationGracePeriodSeconds is %v, but container %q's preStop delay of %v %s needs %v: the container is killed mid-drain", grace, ct.Name, d.Delay(), why, need),
				Hint:    fmt.Sprintf("set terminationGracePeriodSeconds to at least %d", int(need.Seconds()+0.999)),
			}
		}
		return nil
	})
}

func nativeSleepExceedsGrace(_ *Context, w *Workload) []Finding {
	grace := gracePeriod(w.PodSpec)
	return perContainer(w, w.PodSpec.Containers, func(ct corev1.Container) *Finding {
		d := hook.Of(ct)
		if d.Kind != hook.NativeSleep || d.Delay() <= grace {
			return nil
		}
		return &Finding{
			Message: fmt.Sprintf("container %q's native preStop sleep of %v is longer than the %v grace period: the API server rejects it", ct.Name, d.Delay(), grace),
			Hint:    fmt.Sprintf("shorten the sleep or raise terminationGracePeriodSeconds above %d", int(d.Delay().Seconds())),
		}
	})
}

func nativeSleepUnsupported(c *Context, w *Workload) []Finding {
	if c.KubeVersion == nil {
		return nil
	}
	v := *c.KubeVersion
	// The same rule as napctl inject and the webhook: every kubelet that may run the pod.
	kubelet, node := kube.OldestKubelet(v, c.Nodes, w.PodSpec.NodeSelector)
	windows := kube.IsWindows(w.PodSpec)
	return perContainer(w, w.PodSpec.Containers, func(ct corev1.Container) *Finding {
		d := hook.Of(ct)
		f := func() *Finding {
			switch {
			case d.Kind != hook.NativeSleep:
				return nil
			case v.Less(kube.NativeSleepSince):
				return &Finding{
					Message: fmt.Sprintf("container %q uses the native preStop sleep action, which Kubernetes %d.%d does not have (1.30+)", ct.Name, v.Major, v.Minor),
					Hint:    "use the nap binary: napctl inject --mode binary -f " + w.Obj.File,
				}
			case d.Sleep.Seconds == 0 && v.Less(kube.NativeSleepZeroSince):
				return &Finding{
					Message: fmt.Sprintf("container %q sleeps 0 seconds natively, which Kubernetes %d.%d rejects (1.33+)", ct.Name, v.Major, v.Minor),
					Hint:    "remove the preStop hook or sleep at least 1 second",
				}
			case kubelet.Less(kube.NativeSleepSince) && len(c.Nodes) == 1 && c.Nodes[0].Every:
				return &Finding{
					Message: fmt.Sprintf("container %q uses the native preStop sleep action, which kubelets %v (--kubelet-version) do not have (1.30+)", ct.Name, kubelet),
					Hint:    "use the nap binary (napctl inject --mode binary)",
				}
			case kubelet.Less(kube.NativeSleepSince) && node != "":
				return &Finding{
					Message: fmt.Sprintf("container %q uses the native preStop sleep action, which node %s's kubelet %v does not have (1.30+)", ct.Name, node, kubelet),
					Hint:    "use the nap binary (napctl inject --mode binary), or a nodeSelector that keeps the pod on newer nodes",
				}
			case kubelet.Less(kube.NativeSleepSince):
				return &Finding{
					Message: fmt.Sprintf("container %q uses the native preStop sleep action; with Kubernetes %v, kubelets may be as old as %v (the version skew policy), which do not have it (1.30+)", ct.Name, v, kubelet),
					Hint:    "use the nap binary (napctl inject --mode binary), or lint with the cluster's nodes known (--kubelet-version X.Y, the oldest of yours; or --live)",
				}
			}
			return nil
		}()
		if f != nil && windows && strings.Contains(f.Hint, "nap binary") {
			// nap's binary is a Linux executable: on Windows only newer kubelets help.
			f.Hint = "run the pods on kubelets 1.30+ (a nodeSelector, or upgrade the Windows nodes): on Windows, nap's binary (a Linux executable) cannot run"
		}
		return f
	})
}

// NeedsKubelets tells whether judging objs needs the nodes' kubelet versions
// (Options.Nodes): only native-sleep-unsupported reads them, for a container whose
// preStop is the native sleep action. Without one, a caller need not list the nodes.
func NeedsKubelets(objs []*manifest.Object) bool {
	for _, o := range objs {
		w, err := workload(o)
		if w == nil || err != nil {
			continue
		}
		for _, c := range slices.Concat(w.PodSpec.InitContainers, w.PodSpec.Containers) {
			if hook.Of(c).Kind == hook.NativeSleep {
				return true
			}
		}
	}
	return false
}
