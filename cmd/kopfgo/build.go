package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

const buildLong = `Build the operator whose handlers the PATHs register into one binary, the
binary kopfgo run would run, for a container image: it needs no Go toolchain
at run time. Run it as BIN run [flags] (the flags of kopfgo run).

The PATHs are as for kopfgo run. Unless CGO_ENABLED is set, the binary is
built with CGO_ENABLED=0, statically linked, so that it runs in a scratch or
distroless image. GOOS and GOARCH apply as to go build.`

func newBuildCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "build PATH... -o BIN",
		Short: "Build an operator into a static binary, for images",
		Long:  buildLong,
		Args:  runArgs,
		RunE: func(cmd *cobra.Command, paths []string) error {
			r := &runner{stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
			return r.buildBinary(cmd.Context(), paths, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "the binary to write (default: the package's name, in the current directory)")
	return cmd
}

// buildBinary is `kopfgo build`: run's build, to a file of the user's.
func (r *runner) buildBinary(ctx context.Context, paths []string, output string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := r.setup(paths); err != nil {
		return err
	}
	if output != "" && !filepath.IsAbs(output) {
		output = filepath.Join(r.workDir, output)
	}
	if _, ok := os.LookupEnv("CGO_ENABLED"); !ok {
		r.env = append(r.env, "CGO_ENABLED=0")
	}
	tmp, err := os.MkdirTemp("", "kopfgo-build-")
	if err != nil {
		return r.fail(paths, err)
	}
	defer os.RemoveAll(tmp)
	bin, err := r.build(ctx, paths, tmp, output)
	if err != nil {
		return err
	}
	if output == "" {
		// Named after the operator, in the current directory, as go build does.
		output = filepath.Join(r.workDir, filepath.Base(bin))
		if err := os.Rename(bin, output); err != nil {
			return r.fail(paths, errors.Join(fmt.Errorf("cannot move the binary to %s", output), err))
		}
	}
	return nil
}
