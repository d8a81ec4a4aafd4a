package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// OutputFlag adds -o/--output, the format of what cmd prints: kubectl's meaning, the
// only one -o has in napctl. formats[0] is the default; the shell completes them.
func OutputFlag(cmd *cobra.Command, into *string, formats ...string) {
	cmd.Flags().StringVarP(into, "output", "o", formats[0], "output format: "+Either(formats))
	Complete(cmd, "output", formats...)
}

// CheckOutput is the usage error for an -o that is none of formats.
func CheckOutput(cmd *cobra.Command, output string, formats ...string) error {
	if slices.Contains(formats, output) {
		return nil
	}
	return UsageError(cmd, fmt.Errorf("-o %q: want %s", output, Either(formats)))
}

// Complete has the shell complete flag's values with values (and no file names).
func Complete(cmd *cobra.Command, flag string, values ...string) {
	cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// Either writes "a", "a or b", "a, b or c".
func Either(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
