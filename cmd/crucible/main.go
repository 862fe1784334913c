// Command crucible runs untrusted code in hardened sandboxes and runs the
// agents that write that code.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/sandbox/linux/cloexec"

	// The native runtime's init must take over the process before main
	// runs when this binary is started as a sandbox's init.
	_ "github.com/crucible-sandbox/crucible/sandbox/linux"
)

// newRootCommand is the crucible command with every subcommand.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "crucible",
		Short: "Run LLM-generated code safely",
		Example: `  crucible run -c 'print(6*7)'
  crucible session --image datascience
  crucible agent "how many Sundays fell on the first of the month in the 20th century?"
  crucible analyst sales.csv "Which region sells most?"
  crucible serve --addr 127.0.0.1:8080`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newEvalCommand(), newImageCommand(), newSessionCommand(), newAgentCommand(), newAnalystCommand(), newServeCommand(), newMCPCommand(), newKeyCommand(), newBenchCommand())
	return root
}

func main() {
	// Security: a descriptor crucible inherited without close-on-exec (a
	// directory or file its shell opened) would be open in everything it
	// starts, sandboxes' init among them; from here on only the
	// descriptors crucible hands a child on purpose reach it. (Sandbox
	// init closes whatever it inherits too: see package sandboxinit.)
	if err := cloexec.From(3); err != nil {
		errorLine(err)
		os.Exit(exitInternal)
	}
	if err := newRootCommand().Execute(); err != nil {
		var ec exitCodeError
		if asExitCode(err, &ec) {
			os.Exit(int(ec))
		}
		errorLine(err)
		os.Exit(exitUsage)
	}
}
