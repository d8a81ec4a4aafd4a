package binary

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/fsutil"
	"github.com/nap-k8s/nap/sleeper"
	"github.com/nap-k8s/nap/sleeper/nap"
)

type flags struct {
	arch   string
	output string
}

// NewCommand returns the binary command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "binary [--arch amd64|arm64] [--file FILE]",
		Short: "Write the tiny static nap executable",
		Long: "Write the nap sleeper for one architecture: a static Linux executable with no libc\n" +
			"that needs no file at all, for preStop hooks in images without a shell.\n" +
			"Without --file it goes to stdout; with --file the file is written atomically with mode 0755.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(streams, f) },
	}
	cmd.Flags().StringVar(&f.arch, "arch", "amd64", "architecture: "+strings.Join(nap.Arches, ", "))
	cmd.Flags().StringVar(&f.output, "file", "", "write to FILE instead of stdout")
	return cmd
}

func run(streams cli.IOStreams, f *flags) error {
	b, err := sleeper.Binary(f.arch)
	if err != nil {
		return fmt.Errorf("--arch: %w", err)
	}
	if f.output == "" {
		_, err := streams.Out.Write(b)
		return err
	}
	if err := fsutil.WriteFileAtomic(f.output, b, 0o755); err != nil {
		return fmt.Errorf("--file %s: %w", f.output, err)
	}
	return nil
}
