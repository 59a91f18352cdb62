package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/kopfgo/kopfgo/internal/cli"
)

func main() {
	os.Exit(cli.Execute(newRootCommand(), os.Args[1:], os.Stderr))
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "kopfgo",
		Short: "Kubernetes operators in Go, in the style of Kopf",
	}
	root.AddCommand(newRunCommand(), newBuildCommand(), newRBACCommand(), newInspectCommand(), newFreezeCommand(), newResumeCommand(), newVersionCommand(), newTestenvCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of kopfgo and Go",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionString(debug.ReadBuildInfo()))
		},
	}
}

// versionString is "kopfgo version <module version> <go version> <os/arch>",
// as `go version` prints it, with the VCS revision when the binary has it.
func versionString(bi *debug.BuildInfo, ok bool) string {
	version := "(devel)"
	if ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	if ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "+dirty"
				}
			}
		}
		if rev != "" && version == "(devel)" {
			version = fmt.Sprintf("(devel %.12s%s)", rev, modified)
		}
	}
	return fmt.Sprintf("kopfgo version %s %s %s/%s", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
