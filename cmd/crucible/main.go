// Command crucible runs untrusted code in hardened sandboxes and runs the
// agents that write that code.
package main

import (
	"os"

	"github.com/spf13/cobra"

	// The native runtime's init must take over the process before main
	// runs when this binary is started as a sandbox's init.
	_ "github.com/crucible-sandbox/crucible/sandbox/linux"
)

func main() {
	root := &cobra.Command{
		Use:           "crucible",
		Short:         "Run LLM-generated code safely",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newEvalCommand(), newImageCommand(), newSessionCommand(), newAgentCommand(), newServeCommand(), newKeyCommand(), newBenchCommand())
	if err := root.Execute(); err != nil {
		var ec exitCodeError
		if asExitCode(err, &ec) {
			os.Exit(int(ec))
		}
		errorLine(err)
		os.Exit(exitUsage)
	}
}
