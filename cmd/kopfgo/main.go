package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kopfgo/kopfgo/internal/cli"
	"github.com/kopfgo/kopfgo/internal/version"
)

func main() {
	os.Exit(cli.Execute(newRootCommand(), os.Args[1:], os.Stderr))
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "kopfgo",
		Short: "Kubernetes operators in Go, in the style of Kopf",
	}
	root.AddCommand(newRunCommand(), newBuildCommand(), newRBACCommand(), newManifestsCommand(), newInspectCommand(), newFreezeCommand(), newResumeCommand(), newVersionCommand(), newTestenvCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of kopfgo and Go",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.Current().String("kopfgo"))
		},
	}
}
