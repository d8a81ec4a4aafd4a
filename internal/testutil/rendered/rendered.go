package rendered

import (
	"fmt"
	"strings"
)

// Apps is n Deployments, each with its Service, as a chart renders them: a readiness
// probe and no preStop hook yet, so inject has work on every template.
func Apps(n int) []byte {
	var buf strings.Builder
	for i := range n {
		app(&buf, i)
	}
	return []byte(buf.String())
}

// AppsOf is as many applications as Apps writes in at least size bytes, and their
// number.
func AppsOf(size int) ([]byte, int) {
	var buf strings.Builder
	buf.Grow(size + 1024)
	n := 0
	for ; buf.Len() < size; n++ {
		app(&buf, n)
	}
	return []byte(buf.String()), n
}

// app writes application i.
func app(buf *strings.Builder, i int) {
	fmt.Fprintf(buf, `---
# Source: shop/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-%[1]d
  labels:
    app.kubernetes.io/name: web-%[1]d
    app.kubernetes.io/instance: shop
spec:
  replicas: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: web-%[1]d
  template:
    metadata:
      labels:
        app.kubernetes.io/name: web-%[1]d
    spec:
      containers:
        - name: web
          image: "registry.example/web:1.%[1]d"
          ports:
            - name: http
              containerPort: 8080
          readinessProbe:
            httpGet: {path: /readyz, port: http}
          resources:
            requests: {cpu: 10m, memory: 16Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: web-%[1]d
spec:
  selector:
    app.kubernetes.io/name: web-%[1]d
  ports:
    - name: http
      port: 80
      targetPort: http
`, i)
}
