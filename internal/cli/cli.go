package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/nap-k8s/nap/internal/version"
	"github.com/spf13/cobra"
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

// Warn says something on stderr that does not stop cmd, under the command the user
// typed ("napctl status: ...", "kubectl nap status: ...").
func Warn(cmd *cobra.Command, streams IOStreams, format string, args ...any) {
	fmt.Fprintf(streams.ErrOut, cmd.CommandPath()+": "+format+"\n", args...)
}

// ImageHint says how to get napctl's image into a registry the cluster pulls from, and
// which flag then names it: until nap publishes its images, the default one is not.
func ImageHint(flag string) string {
	v := version.Version
	return "Build the images a release publishes with\n" +
		"  go run ./hack/images -version " + v + " -o images.tar    (or: make dist VERSION=" + v + ")\n" +
		"push the controller's with\n" +
		"  skopeo copy --all oci-archive:images.tar:" + version.Image(version.ControllerImage, v) + " docker://REGISTRY/napctl:" + v + "\n" +
		"and pass " + flag + " REGISTRY/napctl:" + v + "."
}
