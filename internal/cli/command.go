package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes, as click's.
const (
	ExitOK    = 0
	ExitError = 1 // the operator or the build failed
	ExitUsage = 2 // wrong flags, arguments or commands
)

// ExitCodeError ends a command with its Code. Whatever there was to say has
// been said (logged or printed) before it is returned.
type ExitCodeError struct{ Code int }

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// RunFunc is the body of a run command, called with the flags completed and
// validated. It returns nil, an *ExitCodeError, or a usage error.
type RunFunc func(cmd *cobra.Command, args []string, flags *RunFlags) error

// NewRunCommand returns a command with the run flags. Errors of parsing and
// of validating the flags, and of args, are usage errors (see Execute).
func NewRunCommand(use, short string, args cobra.PositionalArgs, run RunFunc) *cobra.Command {
	flags := &RunFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := flags.Complete(cmd.Flags(), os.LookupEnv); err != nil {
				return err
			}
			return run(cmd, args, flags)
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}

// Execute runs cmd (a root command) with args and returns the exit code:
// ExitOK, the code of an *ExitCodeError, or ExitUsage for any other error,
// which is a mistake on the command line (unknown flag or command, bad
// value, wrong arguments): those are printed to stderr as click does, with
// the usage line and a pointer to --help.
func Execute(cmd *cobra.Command, args []string, stderr io.Writer) int {
	cmd.SetArgs(args)
	cmd.SilenceErrors = true
	cmd.SilenceUsage = true
	cmd.CompletionOptions.DisableDefaultCmd = true
	failed, err := cmd.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var exit *ExitCodeError
	if errors.As(err, &exit) {
		return exit.Code
	}
	fmt.Fprintf(stderr, "Usage: %s\nTry '%s --help' for help.\n\nError: %v\n", failed.UseLine(), failed.CommandPath(), err)
	return ExitUsage
}
