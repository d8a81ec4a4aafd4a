// Command images writes the end-to-end tests' container images, FROM scratch, as one
// OCI image-layout tarball for `ctr -n k8s.io images import`:
//
//	docker.io/nap/pause:e2e  the pod sandbox: the nap sleeper, sleeping forever
//	docker.io/nap/app:e2e    the demo service (test/app), static, no shell
//	ghcr.io/nap-k8s/napctl:V napctl, the controller's image (the default of napctl
//	                         install --image and of the chart), with the nap sleeper as
//	                         /nap for its own preStop delay; one index, amd64 and arm64
//	ghcr.io/nap-k8s/nap:V    nap's own image (napctl image), amd64 and arm64, for image
//	                         volumes
//	docker.io/nap/nginx:e2e  with -nginx BIN: Debian's nginx (hack/server-bins.sh),
//	                         unmodified, with the machine's libraries it links, no shell
//	docker.io/nap/httpbin:e2e with -httpbin BIN: go-httpbin (hack/tool-versions), static
//
// where V is this build's version (internal/version), so that the lab runs the
// commands' and the chart's defaults as written. With -version V, only the last two, as
// a release of V publishes them (make dist): napctl's version stamped V.
//
// or, with -traefik, only the lab's ingress controller (hack/ingress-bins.sh builds the
// binary), and with -coredns, only its cluster DNS (hack/dns-bins.sh), each in a tarball
// of its own: they are large, and change only with their versions.
//
//	docker.io/nap/traefik:e2e
//	docker.io/nap/coredns:e2e
//
// usage: go run ./hack/images [-nginx BIN] [-httpbin BIN] -o images.tar
//
//	go run ./hack/images -version v0.1.0 -o dist/images.tar
//
//	go run ./hack/images -traefik BIN -o ingress.tar
//	go run ./hack/images -coredns BIN -o dns.tar
package main
