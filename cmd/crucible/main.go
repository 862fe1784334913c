// Command crucible runs untrusted code in hardened sandboxes and runs the
// agents that write that code.
package main

import (
	"os"

	"github.com/spf13/cobra"
)

// newRootCommand is the crucible command with every subcommand.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "crucible",
		Short: "Run LLM-generated code safely",
		Long: `Run LLM-generated code safely, in sandboxes, and the agents that write it.

Every command that runs code takes --runtime: ` + runtimesHelp() + ` (default ` + defaultRuntime() + `). crucible doctor says which this host offers and how to get the others.`,
		Example: `  crucible run -c 'print(6*7)'
  crucible session --image datascience
  crucible agent "how many Sundays fell on the first of the month in the 20th century?"
  crucible analyst sales.csv "Which region sells most?"
  crucible serve --addr 127.0.0.1:8080`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newEvalCommand(), newImageCommand(), newSessionCommand(), newAgentCommand(), newSWECommand(), newAnalystCommand(), newServeCommand(), newMCPCommand(), newKeyCommand(), newDoctorCommand(), newClusterCommand())
	root.AddCommand(nativeCommands()...)
	root.AddCommand(newSWEBenchCommand())
	return root
}

func main() {
	if err := closeInherited(); err != nil {
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
