package cli

import (
	"fmt"
	"io"
	"os"
)

// IOStreams are the standard streams a command uses, injected so that tests can run
// the real command tree against buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// StdStreams returns the process's standard streams.
func StdStreams() IOStreams { return IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr} }

// ExitError asks for a specific exit status; app.Run prints its message, if any.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// VerdictAnnotation marks a command whose exit status 1 is its verdict (lint's
// findings, status's unprotected workloads, probe's failed requests): its other errors
// exit 2, so that a script can tell "found something" from "could not look".
const VerdictAnnotation = "nap.dev/exit-1-is-a-verdict"

// UsageError is a mistake in how a command was called (a flag, an argument): exit 2,
// with a pointer to the command's help.
func UsageError(cmd interface{ CommandPath() string }, err error) error {
	return &ExitError{Code: 2, Err: fmt.Errorf("%w\nSee '%s --help'.", err, cmd.CommandPath())}
}

// ImageHint says how to get napctl's image into a registry the cluster pulls from, and
// which flag then names it: until nap publishes its images, the default one is not.
func ImageHint(flag string) string {
	return "Build the image with\n" +
		"  go run ./hack/images -o images.tar\n" +
		"push it with\n" +
		"  skopeo copy --all oci-archive:images.tar:docker.io/nap/napctl:e2e docker://REGISTRY/napctl:TAG\n" +
		"and pass " + flag + " REGISTRY/napctl:TAG."
}
