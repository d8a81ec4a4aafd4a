// Package install is "napctl install": the manifests that run nap's controller.
package install
