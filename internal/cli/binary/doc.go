// Package binary is "napctl binary": it writes the tiny static nap executable for an
// architecture, to stdout or to a file.
package binary
