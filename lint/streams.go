package lint

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A Service port's stream protocol: what it carries when its connections are long-lived
// (one vocabulary for the checks that care: grpc-readiness, grace-period-too-short).
const (
	StreamGRPC      = "gRPC"
	StreamWebSocket = "WebSocket"
)

// streamProtocol is the stream protocol of Service port p, or "" for request and
// response traffic as far as the manifest tells: appProtocol first (grpc,
// kubernetes.io/h2c; kubernetes.io/ws, kubernetes.io/wss), else the port's name (grpc,
// grpc-*; ws, ws-*, websocket*). Server-sent events are plain HTTP: no manifest says so.
func streamProtocol(p corev1.ServicePort) string {
	proto := ""
	if p.AppProtocol != nil {
		proto = *p.AppProtocol
	}
	switch {
	case proto == "grpc" || proto == "kubernetes.io/h2c":
		return StreamGRPC
	case proto == "kubernetes.io/ws" || proto == "kubernetes.io/wss":
		return StreamWebSocket
	case proto != "":
		return ""
	case p.Name == "grpc" || strings.HasPrefix(p.Name, "grpc-"):
		return StreamGRPC
	case p.Name == "ws" || strings.HasPrefix(p.Name, "ws-") || strings.HasPrefix(p.Name, "websocket"):
		return StreamWebSocket
	}
	return ""
}

// streamPort is a Service port with a stream protocol, and its Service's name.
type streamPort struct {
	port     corev1.ServicePort
	protocol string
	service  string
}

// streamPorts are w's Services' ports that carry streams.
func streamPorts(w *Workload) []streamPort {
	var out []streamPort
	for _, o := range w.Services {
		var svc corev1.Service
		if o.Decode(&svc) != nil {
			continue
		}
		for _, p := range svc.Spec.Ports {
			if proto := streamProtocol(p); proto != "" {
				out = append(out, streamPort{p, proto, o.Name})
			}
		}
	}
	return out
}

// streamsOf is the first stream port of ports that container c serves (false: none).
func streamsOf(ports []streamPort, c corev1.Container) (streamPort, int32, bool) {
	for _, p := range ports {
		for _, cp := range c.Ports {
			if serves(p.port, cp) {
				return p, cp.ContainerPort, true
			}
		}
	}
	return streamPort{}, 0, false
}
