package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nap-k8s/nap/wait"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// DurationFlag adds a duration flag in nap's syntax, as --delay reads it (10s, 1.5 for
// seconds, 500ms: wait.ParseDuration), so that every duration of a command takes the
// same spelling.
func DurationFlag(fl *pflag.FlagSet, into *time.Duration, name string, def time.Duration, usage string) {
	*into = def
	fl.Var((*napDuration)(into), name, usage)
}

// napDuration is a time.Duration flag read by wait.ParseDuration.
type napDuration time.Duration

func (d *napDuration) String() string { return wait.Arg(time.Duration(*d)) }
func (d *napDuration) Type() string   { return "duration" }
func (d *napDuration) Set(s string) error {
	v, err := wait.ParseDuration("", s)
	if err != nil { // pflag names the flag and the value: the reason alone
		_, why, _ := strings.Cut(err.Error(), ": ")
		return errors.New(why)
	}
	*d = napDuration(v)
	return nil
}
