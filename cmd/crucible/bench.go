//go:build linux

package main

import "github.com/spf13/cobra"

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "bench",
		Example: `  crucible bench api --duration 10s --concurrency 2,8,32`,
		Short:   "Measure Crucible's performance on this host",
		Long: `Measure Crucible's performance on this host. Each subcommand starts what it
measures in-process, loads it, and compares it with a baseline measured in the
same run, so that the numbers hold on this machine, today.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newBenchAPICommand(), newBenchRuntimesCommand())
	return cmd
}
