// Package lint is "napctl lint": it reads manifests and reports the zero-downtime
// mistakes that package lint finds.
package lint
