package main

import (
	"cmp"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kopfgo/kopfgo/internal/image"
	"github.com/kopfgo/kopfgo/internal/version"
)

const buildLong = `Build the operator whose handlers the PATHs register into one binary, the
binary kopfgo run would run, or into an OCI image of it: it needs no Go
toolchain at run time. Run the binary as BIN run [flags] (the flags of
kopfgo run).

The PATHs are as for kopfgo run. Unless CGO_ENABLED is set, the binary is
built with CGO_ENABLED=0, statically linked, so that it runs in a scratch or
distroless image; it is stripped (-s -w) and built with -trimpath, so that
the same source gives the same binary. Its version (--version, else what the
go command records) and the commit of the module's git checkout are stamped
into it: BIN version prints them. GOOS and GOARCH apply as to go build.

Without -o, the binary is named after the module (the last element of its
path, as go build names a main package at a module's root) and written to
the current directory.

--image REF, --oci-layout DIR or --tarball FILE build an image instead, with
no docker daemon and nothing pulled: the binary at /operator on a minimal
base (the build machine's CA certificates, a non-root user nonroot with uid
65532, /tmp), entrypoint /operator, command run. --platform builds one
binary per platform and makes an image index of several. With --image alone
the image is pushed to its registry, with the docker config's credentials
(docker login); with --oci-layout or --tarball it is written there instead,
--image only naming it (a tarball needs a tag: docker load tags it so).
Every timestamp in the image is SOURCE_DATE_EPOCH, or else 1970-01-01, so
the same source gives the same digest. The image's reference with its digest
is printed.`

// buildOptions are kopfgo build's flags.
type buildOptions struct {
	output, image, layout, tarball string
	platforms, version, caBundle   string
	insecure                       bool
}

func (o buildOptions) imaging() bool { return o.image != "" || o.layout != "" || o.tarball != "" }

func newBuildCommand() *cobra.Command {
	var o buildOptions
	cmd := &cobra.Command{
		Use:   "build PATH... [-o BIN | --image REF [--oci-layout DIR | --tarball FILE]]",
		Short: "Build an operator into a static binary or an OCI image",
		Long:  buildLong,
		Args:  runArgs,
		RunE: func(cmd *cobra.Command, paths []string) error {
			if o.output != "" && o.imaging() {
				return errors.New("-o writes a binary, --image, --oci-layout and --tarball an image: give one or the other")
			}
			if o.platforms != "" && !o.imaging() {
				return errors.New("--platform is for images (--image, --oci-layout, --tarball); for a binary, set GOOS and GOARCH")
			}
			r := &runner{stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
			return r.buildCommand(cmd.Context(), paths, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.output, "output", "o", "", "the binary to write (default: named after the module, in the current directory)")
	fs.StringVar(&o.image, "image", "", "build an image and push it to this reference, e.g. ghcr.io/me/my-operator:v1")
	fs.StringVar(&o.layout, "oci-layout", "", "write the image into this OCI image layout directory instead of pushing it")
	fs.StringVar(&o.tarball, "tarball", "", "write the image into this tarball for docker load instead of pushing it")
	fs.StringVar(&o.platforms, "platform", "", "the image's platforms, comma-separated, e.g. linux/amd64,linux/arm64 (default linux/"+runtime.GOARCH+")")
	fs.StringVar(&o.version, "version", "", "the version to stamp into the binary and the image's labels (default: the go command's, from VCS tags)")
	fs.StringVar(&o.caBundle, "ca-bundle", "", "the PEM bundle of CA certificates for the image (default: $SSL_CERT_FILE or the system's)")
	fs.BoolVar(&o.insecure, "insecure", false, "push over plain HTTP (a local registry)")
	return cmd
}

// buildCommand is `kopfgo build`: run's build, to a file or an image.
func (r *runner) buildCommand(ctx context.Context, paths []string, o buildOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := r.setup(paths); err != nil {
		return err
	}
	p, err := r.plan(ctx, paths)
	if err != nil {
		return r.fail(paths, err)
	}
	if _, ok := os.LookupEnv("CGO_ENABLED"); !ok {
		r.env = append(r.env, "CGO_ENABLED=0")
	}
	commit := gitCommit(ctx, p.modDir)
	ldflags := append([]string{"-s", "-w"}, version.LinkerFlags(o.version, commit)...)
	r.buildFlags = append(r.buildFlags, "-trimpath", "-ldflags="+strings.Join(ldflags, " "))
	tmp, err := os.MkdirTemp("", "kopfgo-build-")
	if err != nil {
		return r.fail(paths, err)
	}
	defer os.RemoveAll(tmp)
	if !o.imaging() {
		output := o.output
		if output == "" {
			output = defaultOutput(p)
		}
		if !filepath.IsAbs(output) {
			output = filepath.Join(r.workDir, output)
		}
		if isDir(output) {
			return r.fail(paths, fmt.Errorf("%s is a directory: name the binary with -o", output))
		}
		return r.buildPlan(ctx, paths, p, tmp, output, nil)
	}
	return r.buildImage(ctx, paths, p, tmp, o, commit)
}

// buildImage builds a binary per platform and an image of them.
func (r *runner) buildImage(ctx context.Context, paths []string, p *plan, tmp string, o buildOptions, commit string) error {
	platforms, err := image.ParsePlatforms(cmp.Or(o.platforms, "linux/"+runtime.GOARCH))
	if err != nil {
		return r.fail(paths, err)
	}
	ca, _, err := image.FindCABundle(o.caBundle)
	if err != nil {
		return r.fail(paths, err)
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return r.fail(paths, err)
	}
	refName := o.image
	if refName == "" {
		refName = defaultOutput(p) + ":latest"
	}
	ref, err := image.ParseReference(refName, o.insecure)
	if err != nil {
		return r.fail(paths, err)
	}
	spec := image.Spec{CABundle: ca, Cmd: []string{"run"}, Created: created, Revision: commit, Source: sourceURL(p)}
	for _, pl := range platforms {
		bin := filepath.Join(tmp, pl.OS+"-"+pl.Architecture+"-"+pl.Variant, "operator")
		env := []string{"GOOS=" + pl.OS, "GOARCH=" + pl.Architecture}
		if pl.Architecture == "arm" && pl.Variant != "" {
			env = append(env, "GOARM="+strings.TrimPrefix(pl.Variant, "v"))
		}
		if err := r.buildPlan(ctx, paths, p, tmp, bin, env); err != nil {
			return err
		}
		spec.Binaries = append(spec.Binaries, image.Binary{Platform: pl, Path: bin})
	}
	spec.Version = o.version
	if spec.Version == "" {
		// The go command's version of the module (from VCS tags), if any.
		if bi, err := buildinfo.ReadFile(spec.Binaries[0].Path); err == nil && bi.Main.Version != "(devel)" {
			spec.Version = bi.Main.Version
		}
	}
	art, err := image.Build(spec)
	if err != nil {
		return r.fail(paths, err)
	}
	digest, err := art.Digest()
	if err != nil {
		return r.fail(paths, err)
	}
	switch {
	case o.layout != "":
		err = image.WriteLayout(o.layout, refName, art)
	case o.tarball != "":
		err = image.WriteTarball(o.tarball, ref, art)
	default:
		err = image.Push(ctx, ref, art)
	}
	if err != nil {
		return r.fail(paths, err)
	}
	fmt.Fprintf(r.stdout, "%s@%s\n", ref.Context().Name(), digest)
	return nil
}

// defaultOutput names the binary as go build names a main package at the
// module's root: after the module path's last element that is not a major
// version. A main package given as the PATH is named after itself.
func defaultOutput(p *plan) string {
	ip := p.pkgs[0].Module.Path
	if p.isMain {
		ip = p.pkgs[0].ImportPath
	}
	name := path.Base(ip)
	if v, ok := strings.CutPrefix(name, "v"); ok && ip != name {
		if _, err := strconv.Atoi(v); err == nil {
			name = path.Base(path.Dir(ip))
		}
	}
	if name == "." || name == "/" || name == "" {
		name = "operator"
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return name
}

// gitCommit is the commit of dir's git checkout, "" when there is none
// (or no git): the binary then carries what the go command records.
func gitCommit(ctx context.Context, dir string) string {
	git, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	cmd := exec.CommandContext(ctx, git, "rev-parse", "HEAD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// sourceDateEpoch is the time of every timestamp in the image:
// $SOURCE_DATE_EPOCH (reproducible-builds.org), else the Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

// sourceURL is the module's repository when its path names one
// (github.com/me/op → https://github.com/me/op), for the source label.
func sourceURL(p *plan) string {
	mod := p.pkgs[0].Module.Path
	host, _, _ := strings.Cut(mod, "/")
	if !strings.Contains(host, ".") {
		return ""
	}
	return "https://" + mod
}
