// Package image is "napctl image": nap's multi-architecture image, for image volumes.
package image
