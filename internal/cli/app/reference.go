package app

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// CommandReference is the reference of every command under root, in Markdown: its use,
// what it does, its flags as its help shows them, and the flags every command has.
// docs/reference/commands.md is it (TestCommandReference).
func CommandReference(root *cobra.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: every command\n\nGenerated from the commands themselves (`go test ./internal/cli/app -run TestCommandReference -update`): do not edit.\n", root.Name())
	if fl := root.PersistentFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(&b, "\n## Every command's flags\n\n```\n%s```\n", fl.FlagUsages())
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "help" {
				continue
			}
			fmt.Fprintf(&b, "\n## %s\n\n%s.\n\n```\n%s\n```\n", sub.CommandPath(), strings.TrimSuffix(sub.Short, "."), sub.UseLine())
			if long := strings.TrimSpace(sub.Long); long != "" && long != sub.Short {
				fmt.Fprintf(&b, "\n%s\n", indentCode(long))
			}
			if fl := sub.NonInheritedFlags(); hasOwn(fl) {
				fmt.Fprintf(&b, "\nFlags:\n\n```\n%s```\n", fl.FlagUsages())
			}
			walk(sub)
		}
	}
	walk(root)
	return b.String()
}

// hasOwn tells whether fl has a flag that is not help.
func hasOwn(fl *pflag.FlagSet) bool {
	own := false
	fl.VisitAll(func(f *pflag.Flag) { own = own || f.Name != "help" && !f.Hidden })
	return own
}

// indentCode keeps a help text's layout: its lines indented by two spaces or more (the
// examples) become a code block.
func indentCode(s string) string {
	var out []string
	code := false
	for _, line := range strings.Split(s, "\n") {
		isCode := strings.HasPrefix(line, "  ")
		if isCode != code {
			out = append(out, "```")
			code = isCode
		}
		out = append(out, line)
	}
	if code {
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}
