// Package cli holds what napctl's commands share: the I/O streams they write to and
// the error that carries an exit status. Each top-level command is its own package
// under internal/cli, exporting NewCommand(streams); internal/cli/app assembles them.
package cli
