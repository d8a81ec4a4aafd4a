package kube

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The meshes whose proxy sidecar stops serving when the pod is told to stop, with the
// annotations that mesh them and that keep the proxy up (each mesh's own documents):
//
//   - Linkerd: on SIGTERM its proxy refuses new requests at once and lets the open ones
//     finish, so an app's preStop delay holds nothing for requests that come through
//     it. config.alpha.linkerd.io/proxy-wait-before-exit-seconds delays the proxy's
//     handling of SIGTERM (it should be at least the app's delay, and the grace period
//     must cover it); a native sidecar proxy
//     (config.alpha.linkerd.io/proxy-enable-native-sidecar) stops after the app.
//   - Istio, with its classic sidecar: on SIGTERM istio-agent drains Envoy for
//     terminationDrainDuration (5 s unless proxy.istio.io/config sets it), then ends
//     it; a delay longer than that loses what the routes still send. Its native
//     sidecar (an init container with restartPolicy Always, which
//     sidecar.istio.io/nativeSidecar asks for) stops after the app, as the kubelet
//     stops native sidecars last.
const (
	LinkerdInject        = "linkerd.io/inject"
	LinkerdWaitBefore    = "config.alpha.linkerd.io/proxy-wait-before-exit-seconds"
	LinkerdNativeSidecar = "config.alpha.linkerd.io/proxy-enable-native-sidecar"
	LinkerdProxy         = "linkerd-proxy" // the proxy container's name
	IstioInject          = "sidecar.istio.io/inject"
	IstioProxyConfig     = "proxy.istio.io/config"
	IstioNativeSidecar   = "sidecar.istio.io/nativeSidecar"
	IstioProxy           = "istio-proxy" // the proxy container's name
	// IstioDrainDefault is istio-agent's terminationDrainDuration when none is set.
	IstioDrainDefault = 5 * time.Second
)

// Need is what a meshed pod needs of its proxy: why the delay does not hold, and what
// to set.
type Need struct{ Why, Fix string }

// MeshNeed says what a pod with these annotations, labels and spec needs of its mesh's
// proxy for a preStop delay of d to hold: ok false when it runs no such proxy (as far as
// its template shows: a namespace's injection label is not seen), or when the proxy
// already stays up for d.
func MeshNeed(annotations, labels map[string]string, spec *corev1.PodSpec, d time.Duration) (need Need, ok bool) {
	switch {
	case meshed(annotations, labels, spec, LinkerdInject, LinkerdProxy, "enabled", "ingress"):
		if annotations[LinkerdNativeSidecar] == "true" || nativeSidecar(spec, LinkerdProxy) {
			return Need{}, false
		}
		secs, err := strconv.ParseFloat(annotations[LinkerdWaitBefore], 64)
		if err == nil && time.Duration(secs*float64(time.Second)) >= d {
			return Need{}, false
		}
		now := "not set"
		if err == nil {
			now = annotations[LinkerdWaitBefore] + " s"
		}
		return Need{
			Why: fmt.Sprintf("Linkerd's proxy refuses new requests as soon as the pod is told to stop (%s %s), so the %v delay holds nothing for the requests through it", LinkerdWaitBefore, now, d),
			Fix: fmt.Sprintf("set annotation %s: %q on the pod template (at least the delay, within terminationGracePeriodSeconds), or run the proxy as a native sidecar (%s: \"true\")",
				LinkerdWaitBefore, strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10), LinkerdNativeSidecar),
		}, true
	case meshed(annotations, labels, spec, IstioInject, IstioProxy, "true"):
		if annotations[IstioNativeSidecar] == "true" || nativeSidecar(spec, IstioProxy) {
			return Need{}, false
		}
		drain := IstioDrainDefault
		var cfg struct {
			TerminationDrainDuration string `json:"terminationDrainDuration"`
		}
		if yaml.Unmarshal([]byte(annotations[IstioProxyConfig]), &cfg) == nil && cfg.TerminationDrainDuration != "" {
			if v, err := time.ParseDuration(cfg.TerminationDrainDuration); err == nil {
				drain = v
			}
		}
		if drain >= d {
			return Need{}, false
		}
		return Need{
			Why: fmt.Sprintf("Istio's sidecar drains for terminationDrainDuration (%v) once the pod is told to stop, then exits, before the %v delay ends", drain, d),
			Fix: fmt.Sprintf("set annotation %s: '{\"terminationDrainDuration\": \"%v\"}' on the pod template (at least the delay), or run the proxy as a native sidecar (%s: \"true\")", IstioProxyConfig, d, IstioNativeSidecar),
		}, true
	}
	return Need{}, false
}

// meshed: the pod template asks the mesh to inject (key on its annotations or labels,
// one of values), or its proxy container is already in it (an injected manifest).
func meshed(annotations, labels map[string]string, spec *corev1.PodSpec, key, proxy string, values ...string) bool {
	for _, v := range values {
		if annotations[key] == v || labels[key] == v {
			return true
		}
	}
	for _, c := range spec.Containers {
		if c.Name == proxy {
			return true
		}
	}
	return nativeSidecar(spec, proxy)
}

// nativeSidecar: the proxy runs as a native sidecar (an init container that restarts
// always), which the kubelet stops after the app.
func nativeSidecar(spec *corev1.PodSpec, proxy string) bool {
	for _, c := range spec.InitContainers {
		if c.Name == proxy && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return true
		}
	}
	return false
}
