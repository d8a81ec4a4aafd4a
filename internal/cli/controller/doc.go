// Package controller is "napctl controller": flags in, controller.NewManager, Start.
// The wiring itself is package controller's.
package controller
