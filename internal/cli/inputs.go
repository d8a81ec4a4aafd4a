package cli

import (
	"errors"
	"io"
	"os"
	"slices"

	"golang.org/x/term"
)

// Inputs are the manifests a command reads: its -f paths and its positional ones (as
// kube-score and kube-linter take them); with none, stdin, unless stdin is a terminal:
// then, as kubectl says, "must specify -f" (a usage error) rather than waiting silently.
func Inputs(cmd interface{ CommandPath() string }, files, args []string, in io.Reader) ([]string, error) {
	files = append(slices.Clone(files), args...)
	if len(files) > 0 {
		return files, nil
	}
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return nil, UsageError(cmd, errors.New("must specify -f FILE|DIR|- or a path (stdin is a terminal)"))
	}
	return []string{"-"}, nil
}
