package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kopfgo/kopfgo/internal/cli"
)

const runLong = `Build the operator whose handlers the PATHs register, and run it.

Each PATH is a Go package: a directory, an import path, or a pattern such as
./handlers/... . A package registers its handlers in a function

    func Register(r kopfgo.Registrar) { r.Create("kopfexamples", createFn) }

which kopfgo calls with the default operator's Registrar (kopfgo.On); handlers
registered in init() on the default operator are registered too. kopfgo builds
the packages, in their own module, with a generated main that imports them,
calls their Register functions and then kopfgo.Main(). A single PATH that is
a main package is built as it is: it must call kopfgo.Main() (and the
Register functions itself). The flags may come before, between or after the
PATHs; they are those of kopfgo.Main and are passed on to the operator.

SIGINT and SIGTERM are passed on to the operator: the first one stops it
gracefully, a second one at once. kopfgo exits with the operator's exit code.`

// The import path of the root package, imported by the generated main.
const kopfgoImportPath = "github.com/kopfgo/kopfgo"

// mainDirName is the virtual directory of the generated main, at the root
// of the packages' module. Go ignores directories starting with "_" in
// patterns such as ./..., and the directory is never created: it exists
// only in the overlay given to go build.
const mainDirName = "_kopfgo_run"

func newRunCommand() *cobra.Command {
	cmd := cli.NewRunCommand("run PATH... [flags]", "Build and run an operator", runArgs,
		func(cmd *cobra.Command, paths []string, _ *cli.RunFlags) error {
			r := &runner{stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
			return r.run(paths, cli.Args(cmd.Flags()))
		})
	cmd.Long = runLong
	return cmd
}

func runArgs(_ *cobra.Command, args []string) error {
	if len(args) == 0 {
		return errors.New("requires at least one PATH: a Go package (directory, import path or pattern) that registers handlers")
	}
	return nil
}

// runner builds the operator and runs it. Its fields are for tests.
type runner struct {
	stdout, stderr io.Writer
	goTool         string   // "go" in PATH if empty
	workDir        string   // the current directory if empty
	env            []string // added to the go build's environment
	buildFlags     []string // added to go build's flags (kopfgo build's)
}

// pkg is what go list says of a package.
type pkg struct {
	Dir        string
	ImportPath string
	Name       string
	GoFiles    []string
	Module     *struct{ Path, Dir, GoMod string }

	// register: the package declares func Register(r kopfgo.Registrar),
	// which the generated main calls (findRegister).
	register bool
}

// plan is what to build: packages of one module.
type plan struct {
	pkgs     []pkg
	modDir   string
	goMod    string
	buildDir string // where go build runs
	isMain   bool   // one package, a main package: built as it is
}

func (r *runner) run(paths, args []string) error {
	if err := r.setup(paths); err != nil {
		return err
	}

	// From here on, SIGINT and SIGTERM stop the build, then go to the operator.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)

	tmp, err := os.MkdirTemp("", "kopfgo-run-")
	if err != nil {
		return r.fail(paths, err)
	}
	defer os.RemoveAll(tmp)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupted := make(chan os.Signal, 1)
	building := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel()
			interrupted <- s
		case <-building:
			interrupted <- nil
		}
	}()
	bin, err := r.build(ctx, paths, tmp, "")
	close(building)
	if s := <-interrupted; s != nil {
		return &cli.ExitCodeError{Code: cli.SignalExitCode(s)}
	}
	if err != nil {
		return err
	}
	return r.exec(bin, append([]string{"run"}, args...), sigs)
}

// setup finds the go command and the current directory, unless set.
func (r *runner) setup(paths []string) error {
	if r.goTool == "" {
		goTool, err := exec.LookPath("go")
		if err != nil {
			fmt.Fprintln(r.stderr, "kopfgo: kopfgo needs the go command in PATH to build the operator:", err)
			return &cli.ExitCodeError{Code: cli.ExitError}
		}
		r.goTool = goTool
	}
	if r.workDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return r.fail(paths, err)
		}
		r.workDir = wd
	}
	return nil
}

// fail reports an error about building paths.
func (r *runner) fail(paths []string, err error) error {
	fmt.Fprintf(r.stderr, "kopfgo: cannot build %s: %v\n", strings.Join(paths, " "), err)
	return &cli.ExitCodeError{Code: cli.ExitError}
}

// build builds the operator of paths and returns the binary: bin if given,
// else a file in dir named after the operator. dir also holds the generated
// main.
func (r *runner) build(ctx context.Context, paths []string, dir, bin string) (string, error) {
	p, err := r.plan(ctx, paths)
	if ctx.Err() != nil {
		return "", ctx.Err() // interrupted: nothing to report
	}
	if err != nil {
		return "", r.fail(paths, err)
	}
	if bin == "" {
		bin = filepath.Join(dir, binaryName(p))
	}
	return bin, r.buildPlan(ctx, paths, p, dir, bin, nil)
}

// buildPlan builds p into bin with env added to the go command's, dir
// holding the generated main.
func (r *runner) buildPlan(ctx context.Context, paths []string, p *plan, dir, bin string, env []string) error {
	args := append(append([]string{"build"}, r.buildFlags...), "-o", bin)
	if p.isMain {
		args = append(args, p.pkgs[0].ImportPath)
	} else {
		mainDir := filepath.Join(p.modDir, mainDirName)
		for i := 2; exists(mainDir); i++ {
			mainDir = filepath.Join(p.modDir, fmt.Sprintf("%s_%d", mainDirName, i))
		}
		mainFile := filepath.Join(dir, "main.go")
		if err := os.WriteFile(mainFile, generateMain(p.pkgs), 0o644); err != nil {
			return r.fail(paths, err)
		}
		overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(mainDir, "main.go"): mainFile}})
		if err != nil {
			return r.fail(paths, err)
		}
		overlayFile := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
			return r.fail(paths, err)
		}
		args = append(args, "-overlay", overlayFile, mainDir)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, r.goTool, args...)
	cmd.Dir = p.buildDir
	cmd.Env = append(append(os.Environ(), r.env...), env...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.stderr.Write(out.Bytes())
		if !p.isMain && strings.Contains(out.String(), "provides package "+kopfgoImportPath+";") {
			err = fmt.Errorf("module %s does not require %s: add it with go get %[2]s", p.pkgs[0].Module.Path, kopfgoImportPath)
			return r.fail(paths, err)
		}
		return r.fail(paths, firstError(out.String(), err))
	}
	r.stderr.Write(out.Bytes()) // warnings, if any
	return nil
}

// plan lists the packages of paths and checks that they can be built
// together.
func (r *runner) plan(ctx context.Context, paths []string) (*plan, error) {
	var pkgs []pkg
	seen := map[string]bool{}
	for _, p := range paths {
		listed, err := r.list(ctx, p)
		if err != nil {
			return nil, err
		}
		if len(listed) == 0 {
			return nil, fmt.Errorf("%s matches no Go packages", p)
		}
		for _, l := range listed {
			if !seen[l.ImportPath] {
				seen[l.ImportPath] = true
				pkgs = append(pkgs, l)
			}
		}
	}
	first := pkgs[0]
	if first.Module == nil {
		return nil, fmt.Errorf("%s is not in a Go module (kopfgo run builds within the packages' module: see go mod init)", first.Dir)
	}
	for _, p := range pkgs[1:] {
		if p.Module == nil || p.Module.GoMod != first.Module.GoMod {
			other := "no module"
			if p.Module != nil {
				other = "module " + p.Module.Path
			}
			return nil, fmt.Errorf("%s (module %s) and %s (%s) are not in one module: kopfgo run builds one module's packages",
				first.ImportPath, first.Module.Path, p.ImportPath, other)
		}
	}
	pl := &plan{pkgs: pkgs, modDir: first.Module.Dir, goMod: first.Module.GoMod, buildDir: first.Module.Dir}
	for _, p := range pkgs {
		if p.Name != "main" {
			continue
		}
		if len(pkgs) > 1 {
			return nil, fmt.Errorf("%s is a main package: name it alone, as the only PATH (it must call kopfgo.Main())", p.ImportPath)
		}
		pl.isMain = true
	}
	if !pl.isMain {
		for i := range pl.pkgs {
			var err error
			if pl.pkgs[i].register, err = findRegister(pl.pkgs[i]); err != nil {
				return nil, err
			}
		}
	}
	// Build from the current directory if it is in the same module, so
	// that the compiler's messages name the files as the user would.
	if gomod, err := r.goEnv(ctx, r.workDir, "GOMOD"); err == nil && gomod == pl.goMod {
		pl.buildDir = r.workDir
	}
	return pl, nil
}

// list runs go list on one PATH: in the directory itself if it is one (so
// that it may be in another module than the current directory).
func (r *runner) list(ctx context.Context, p string) ([]pkg, error) {
	dir, pattern := r.workDir, p
	local := func(d string) string {
		if !filepath.IsAbs(d) {
			d = filepath.Join(r.workDir, d)
		}
		return d
	}
	if isDir(local(p)) {
		dir, pattern = local(p), "."
	} else if base, ok := strings.CutSuffix(filepath.ToSlash(p), "/..."); ok && isDir(local(base)) {
		dir, pattern = local(base), "./..."
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, r.goTool, "list", "-json=Dir,ImportPath,Name,GoFiles,Module", pattern)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, firstError(stderr.String(), err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(&stdout)
	for {
		var l pkg
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list %s: %w", p, err)
		}
		pkgs = append(pkgs, l)
	}
	return pkgs, nil
}

func (r *runner) goEnv(ctx context.Context, dir, name string) (string, error) {
	cmd := exec.CommandContext(ctx, r.goTool, "env", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// generateMain is the main package of an operator made of pkgs: it
// imports them, so that their init functions run, calls the Register of
// those that have one on the default operator, and runs it.
func generateMain(pkgs []pkg) []byte {
	registers := map[string]bool{}
	var paths []string
	for _, p := range pkgs {
		if p.ImportPath != kopfgoImportPath {
			paths = append(paths, p.ImportPath)
			registers[p.ImportPath] = registers[p.ImportPath] || p.register
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	var b, calls bytes.Buffer
	b.WriteString("// Code generated by kopfgo run. DO NOT EDIT.\n\n")
	b.WriteString("// The operator of the handlers that these packages register.\npackage main\n\n")
	b.WriteString("import (\n\t\"" + kopfgoImportPath + "\"\n")
	if len(paths) > 0 {
		b.WriteString("\n")
	}
	for i, p := range paths {
		name := "_"
		if registers[p] {
			name = fmt.Sprintf("pkg%d", i+1)
			fmt.Fprintf(&calls, "\t%s.%s(kopfgo.On)\n", name, registerFunc)
		}
		fmt.Fprintf(&b, "\t%s %q\n", name, p)
	}
	if calls.Len() == 0 {
		b.WriteString(")\n\nfunc main() { kopfgo.Main() }\n")
		return b.Bytes()
	}
	b.WriteString(")\n\nfunc main() {\n")
	b.Write(calls.Bytes())
	b.WriteString("\tkopfgo.Main()\n}\n")
	return b.Bytes()
}

// binaryName names the operator's binary after its (first) package, which
// is the name its --help shows.
func binaryName(p *plan) string {
	name := path.Base(p.pkgs[0].ImportPath)
	if name == "." || name == "/" || name == "" {
		name = "operator"
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return name
}

// firstError is the first line of the go command's output that is an error
// (not a "# package" header, nor progress such as "go: downloading m v1",
// which a cold module cache prints before the real error), or err.
func firstError(out string, err error) error {
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "go: downloading ") {
			return errors.New(line)
		}
	}
	return err
}

// exec runs the binary with args and returns its exit code, passing on
// the signals.
func (r *runner) exec(bin string, args []string, sigs <-chan os.Signal) error {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	cmd.SysProcAttr = sysProcAttr()
	started, waited := make(chan error, 1), make(chan error, 1)
	go func() {
		// Linux sends the parent-death signal when the thread that started
		// the child ends (golang/go#27505), and Go ends the thread of a
		// goroutine that returns while locked to it: keep the starting
		// thread to this goroutine until the child has exited.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		fmt.Fprintf(r.stderr, "kopfgo: cannot run %s: %v\n", bin, err)
		return &cli.ExitCodeError{Code: cli.ExitError}
	}
	var err error
wait:
	for {
		select {
		case s := <-sigs:
			forward(cmd.Process, s)
		case err = <-waited:
			break wait
		}
	}
	if err == nil {
		return nil
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		fmt.Fprintf(r.stderr, "kopfgo: %s: %v\n", bin, err)
		return &cli.ExitCodeError{Code: cli.ExitError}
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &cli.ExitCodeError{Code: cli.SignalExitCode(ws.Signal())}
	}
	return &cli.ExitCodeError{Code: exitErr.ExitCode()}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
