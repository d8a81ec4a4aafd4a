// Package status is "napctl status": fleet coverage of a live cluster, from package
// status over objects that package live reads.
package status
