package cluster

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Versions of the servers built by the tools modules (toolsrc). They are
// part of the cached binaries' names, so bumping a tools module must bump the
// constant too (a unit test checks that they agree), or a stale binary is reused.
const (
	KubeAPIServerVersion = "v1.34.3"
	EtcdVersion          = "v3.6.5"
)

// Environment variables understood by EnsureBinaries.
const (
	// EnvCache overrides the cache directory (binaries go to $KOPFGO_CACHE/bin).
	EnvCache = "KOPFGO_CACHE"
	// EnvKubeAPIServer and EnvEtcd name ready-made binaries to use instead of
	// building them, e.g. in CI with its own cache or with envtest's assets.
	EnvKubeAPIServer = "KOPFGO_KUBE_APISERVER"
	EnvEtcd          = "KOPFGO_ETCD"
	// EnvToolsDir points to a directory holding kube-apiserver and etcd tools
	// modules of your own (e.g. other versions), used instead of the embedded ones.
	EnvToolsDir = "KOPFGO_TOOLS_DIR"
)

// Binaries are the paths of the server executables a Cluster runs.
type Binaries struct {
	APIServer string
	Etcd      string
}

// Logf receives progress messages; fmt.Printf-style, without a trailing newline.
type Logf func(format string, args ...any)

func (l Logf) printf(format string, args ...any) {
	if l != nil {
		l(format, args...)
	}
}

// tool describes one server binary and how to get it.
type tool struct {
	name    string // directory name under toolsrc and binary name prefix
	version string
	env     string // environment variable naming a ready-made binary
	hint    string // how long a cold build takes, for the log
	ldflags string
}

var tools = []tool{
	{name: "etcd", version: EtcdVersion, env: EnvEtcd, hint: "about 30 s", ldflags: "-s -w"},
	{name: "kube-apiserver", version: KubeAPIServerVersion, env: EnvKubeAPIServer, hint: "about 5 min on 2 cores",
		ldflags: "-s -w " + kubeVersionLDFlags(KubeAPIServerVersion)},
}

// kubeVersionLDFlags stamps the version that Kubernetes' own build sets from
// git, so that /version says v1.34.3 rather than v0.0.0-master+$Format:%H$,
// which clients that parse the server version (kubectl version among them)
// reject.
func kubeVersionLDFlags(version string) string {
	const pkg = "k8s.io/component-base/version"
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	return strings.Join([]string{
		"-X " + pkg + ".gitVersion=" + version,
		"-X " + pkg + ".gitMajor=" + major,
		"-X " + pkg + ".gitMinor=" + minor,
		"-X " + pkg + ".gitTreeState=clean",
	}, " ")
}

// EnsureBinaries finds or builds kube-apiserver and etcd and returns their
// paths. Built binaries are cached under CacheDir()/bin with versioned names, so
// only the first run on a machine pays for the build (minutes for
// kube-apiserver). A file lock serialises concurrent callers, e.g. several test
// binaries started by one `go test ./...`, so that each binary is built once.
func EnsureBinaries(ctx context.Context, logf Logf) (Binaries, error) {
	var bins Binaries
	for _, t := range tools {
		path, err := ensureTool(ctx, t, logf)
		if err != nil {
			return Binaries{}, err
		}
		switch t.name {
		case "etcd":
			bins.Etcd = path
		case "kube-apiserver":
			bins.APIServer = path
		}
	}
	return bins, nil
}

// CacheDir is where kopfgo keeps built binaries: $KOPFGO_CACHE if set, else
// $XDG_CACHE_HOME/kopfgo or ~/.cache/kopfgo (os.UserCacheDir's rules on other
// systems).
func CacheDir() (string, error) {
	if dir := os.Getenv(EnvCache); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the kopfgo binaries (set %s): %w", EnvCache, err)
	}
	return filepath.Join(base, "kopfgo"), nil
}

func ensureTool(ctx context.Context, t tool, logf Logf) (string, error) {
	if path := os.Getenv(t.env); path != "" {
		if err := checkExecutable(path); err != nil {
			return "", fmt.Errorf("%s=%s: %w", t.env, path, err)
		}
		return path, nil
	}

	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	binDir := filepath.Join(cache, "bin")
	target := filepath.Join(binDir, t.name+"-"+t.version)
	if checkExecutable(target) == nil {
		return target, nil // the common case: no lock needed to read a finished binary
	}

	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", fmt.Errorf("creating the binaries cache %s (set %s to use another place): %w", binDir, EnvCache, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(binDir, ".lock"), logf)
	if err != nil {
		return "", err
	}
	defer unlock()

	// Someone else may have built it while we waited for the lock.
	if checkExecutable(target) == nil {
		return target, nil
	}

	src, err := findToolDir(t, cache)
	if err != nil {
		return "", err
	}
	logf.printf("building %s %s from %s into %s; a cold build takes %s, later runs reuse it", t.name, t.version, src, target, t.hint)
	started := time.Now()
	if err := goBuild(ctx, src, binDir, target, t.ldflags); err != nil {
		return "", fmt.Errorf("building %s %s: %w", t.name, t.version, err)
	}
	logf.printf("built %s in %s", t.name, time.Since(started).Round(time.Second))
	return target, nil
}

// goBuild builds the main package in dir into a temporary file in binDir and
// renames it to target, so that an interrupted build never leaves a truncated
// binary under the final name.
func goBuild(ctx context.Context, dir, binDir, target, ldflags string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command is needed to build the test servers (put it on PATH, or set %s and %s): %w", EnvKubeAPIServer, EnvEtcd, err)
	}
	tmp, err := os.CreateTemp(binDir, ".build-"+filepath.Base(target)+"-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName) // a no-op after a successful rename

	cmd := exec.CommandContext(ctx, goBin, "build", "-ldflags", ldflags, "-o", tmpName, ".")
	cmd.Dir = dir
	// The tools are modules of their own: a go.work of the caller's must not
	// pull them into a workspace where the replaces would not apply.
	// A user's GOFLAGS=-mod=vendor would not find the tools' dependencies.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	// Own process group, so that cancelling kills the compilers too, not just go.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		return fmt.Errorf("go build in %s: %w\n%s", dir, err, tail(out.String(), 40))
	}
	if err := os.Chmod(tmpName, 0o755); err != nil {
		return err
	}
	return os.Rename(tmpName, target)
}

// toolSources are the tools modules: a main package calling the upstream
// server's entry point, its go.mod (kube-apiserver's replaces every staging
// module k8s.io/kubernetes names) and go.sum. They are embedded, not modules
// of their own in the repository, because a module's download from the
// proxy leaves out nested modules: embedded, they reach every user of this
// package, who then builds the same servers from the Go module proxy.
//
//go:embed toolsrc
var toolSources embed.FS

// findToolDir returns a directory holding the tools module for t:
// $KOPFGO_TOOLS_DIR/<name> if that is set, else the embedded sources written
// out under the cache (src/<name>-<version>), rewritten when they differ.
func findToolDir(t tool, cache string) (string, error) {
	if dir := os.Getenv(EnvToolsDir); dir != "" {
		dir = filepath.Join(dir, t.name)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			return "", fmt.Errorf("%s: no tools module for %s: %w", EnvToolsDir, t.name, err)
		}
		return dir, nil
	}
	files, err := fs.ReadDir(toolSources, "toolsrc/"+t.name)
	if err != nil {
		return "", fmt.Errorf("no sources for %s (set %s and %s to ready-made binaries): %w", t.name, EnvKubeAPIServer, EnvEtcd, err)
	}
	dir := filepath.Join(cache, "src", t.name+"-"+t.version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("writing the %s sources (set %s to use another place): %w", t.name, EnvCache, err)
	}
	for _, f := range files {
		data, err := toolSources.ReadFile("toolsrc/" + t.name + "/" + f.Name())
		if err != nil {
			return "", err
		}
		target := filepath.Join(dir, strings.TrimSuffix(f.Name(), ".txt"))
		if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return "", fmt.Errorf("writing the %s sources: %w", t.name, err)
		}
	}
	return dir, nil
}

func checkExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 || st.Size() == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// lockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait (a blocking flock cannot be interrupted). The lock dies with the
// process, so a killed build never leaves it stuck.
func lockFile(ctx context.Context, path string, logf Logf) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the build lock %s: %w", path, err)
	}
	waiting := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !waiting {
			logf.printf("waiting for another process building the test servers (lock %s)", path)
			waiting = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the build lock %s: %w", path, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
