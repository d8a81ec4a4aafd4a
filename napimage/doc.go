// Package napimage is nap's own image: the sleeper for every architecture nap has, FROM
// scratch, each image holding only /nap, as one multi-architecture OCI image. Mounted as
// an image volume (Kubernetes 1.35+, a runtime that supports them), the kubelet pulls
// its node's architecture: what the per-namespace ConfigMap cannot do for a pod whose
// architecture is unknown at admission.
package napimage
