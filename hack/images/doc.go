// Command images writes the end-to-end tests' container images, FROM scratch, as one
// OCI image-layout tarball for `ctr -n k8s.io images import`:
//
//	docker.io/nap/pause:e2e  the pod sandbox: the nap sleeper, sleeping forever
//	docker.io/nap/app:e2e    the demo service (test/app), static, no shell
//	docker.io/nap/napctl:e2e napctl, the controller's image (napctl install --image),
//	                         with the nap sleeper as /nap for its own preStop delay; one
//	                         index, amd64 and arm64
//	docker.io/nap/nap:e2e    nap's own image (napctl image), amd64 and arm64, for image
//	                         volumes
//
// or, with -traefik, only the lab's ingress controller (hack/ingress-bins.sh builds the
// binary), in a tarball of its own: it is large, and changes only with its version.
//
//	docker.io/nap/traefik:e2e
//
// usage: go run ./hack/images -o images.tar
//
//	go run ./hack/images -traefik BIN -o ingress.tar
package main
