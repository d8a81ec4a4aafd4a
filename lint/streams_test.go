package lint

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A port's stream protocol: appProtocol first, then the name; an appProtocol of
// something else is not overruled by the name.
func TestStreamProtocol(t *testing.T) {
	ap := func(s string) *string { return &s }
	for _, c := range []struct {
		port corev1.ServicePort
		want string
	}{
		{corev1.ServicePort{AppProtocol: ap("grpc")}, StreamGRPC},
		{corev1.ServicePort{AppProtocol: ap("kubernetes.io/h2c")}, StreamGRPC},
		{corev1.ServicePort{AppProtocol: ap("kubernetes.io/ws")}, StreamWebSocket},
		{corev1.ServicePort{AppProtocol: ap("kubernetes.io/wss")}, StreamWebSocket},
		{corev1.ServicePort{Name: "grpc-api"}, StreamGRPC},
		{corev1.ServicePort{Name: "ws"}, StreamWebSocket},
		{corev1.ServicePort{Name: "websocket-feed"}, StreamWebSocket},
		{corev1.ServicePort{Name: "http"}, ""},
		{corev1.ServicePort{Name: "wsdl"}, ""},
		{corev1.ServicePort{Name: "grpc", AppProtocol: ap("http")}, ""},
	} {
		if got := streamProtocol(c.port); got != c.want {
			t.Errorf("port %+v: %q, want %q", c.port, got, c.want)
		}
	}
}
