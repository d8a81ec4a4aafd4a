// Package oci writes container images from static binaries, FROM scratch, as OCI
// image-layout tarballs that `ctr -n k8s.io images import` loads: the images of nap's
// end-to-end tests (the pause container, the demo app, the controller) need no Docker
// engine and no registry.
package oci
