package cluster

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
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
	// cold bounds a cold build on a loaded 2-core machine (empty module and
	// build caches), for callers deciding whether a build fits their time.
	cold    time.Duration
	ldflags string
}

var tools = []tool{
	{name: "etcd", version: EtcdVersion, env: EnvEtcd, hint: "1 to 4 min on 2 cores", cold: 4 * time.Minute, ldflags: "-s -w"},
	{name: "kube-apiserver", version: KubeAPIServerVersion, env: EnvKubeAPIServer, hint: "5 to 11 min on 2 cores",
		cold: 12 * time.Minute, ldflags: "-s -w " + kubeVersionLDFlags(KubeAPIServerVersion)},
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
		bins.set(t.name, path)
	}
	return bins, nil
}

// Missing is a server that EnsureBinaries would have to build.
type Missing struct {
	Name string // etcd or kube-apiserver
	Path string // where the build would put it
	// ColdBuild bounds its build from empty caches on a loaded 2-core
	// machine (with a warm Go build cache it takes far less).
	ColdBuild time.Duration
}

// ErrNotBuilt is wrapped by LookupBinaries' error when a server is missing.
var ErrNotBuilt = errors.New("the test servers are not built")

// LookupBinaries is EnsureBinaries without the build: the paths of the
// servers if they are at hand (named by the environment or in the cache),
// else what is missing and an error wrapping ErrNotBuilt.
func LookupBinaries() (Binaries, []Missing, error) {
	var bins Binaries
	var missing []Missing
	for _, t := range tools {
		path, err := t.lookup()
		switch {
		case errors.Is(err, ErrNotBuilt):
			missing = append(missing, Missing{Name: t.name, Path: path, ColdBuild: t.cold})
			continue
		case err != nil:
			return Binaries{}, nil, err
		}
		bins.set(t.name, path)
	}
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = m.Name
		}
		return bins, missing, fmt.Errorf("%w: %s", ErrNotBuilt, strings.Join(names, " and "))
	}
	return bins, nil, nil
}

func (b *Binaries) set(name, path string) {
	switch name {
	case "etcd":
		b.Etcd = path
	case "kube-apiserver":
		b.APIServer = path
	}
}

// lookup returns the tool's path if it is at hand; else where a build would
// put it and an error wrapping ErrNotBuilt.
func (t tool) lookup() (string, error) {
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
	target := filepath.Join(cache, "bin", t.name+"-"+t.version)
	if err := checkExecutable(target); err != nil {
		return target, fmt.Errorf("%w: %s: %w", ErrNotBuilt, t.name, err)
	}
	return target, nil
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
	target, err := t.lookup()
	if !errors.Is(err, ErrNotBuilt) {
		return target, err // the common case: no lock needed to read a finished binary
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	binDir := filepath.Dir(target)
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", fmt.Errorf("creating the binaries cache %s (set %s to use another place): %w", binDir, EnvCache, err)
	}
	lock, err := lockFile(ctx, filepath.Join(binDir, ".lock"), logf)
	if err != nil {
		return "", err
	}
	defer lock.unlock()

	// Someone else may have built it while we waited for the lock.
	if checkExecutable(target) == nil {
		return target, nil
	}
	lock.recover(binDir, logf)

	src, err := findToolDir(t, cache)
	if err != nil {
		return "", err
	}
	logf.printf("building %s %s from %s into %s; a cold build takes %s, later runs reuse it", t.name, t.version, src, target, t.hint)
	started := time.Now()
	if err := goBuild(ctx, src, binDir, target, t.ldflags, lock, progress(t.name, started, logf)); err != nil {
		return "", fmt.Errorf("building %s %s: %w", t.name, t.version, err)
	}
	logf.printf("built %s in %s", t.name, time.Since(started).Round(time.Second))
	return target, nil
}

// progressEvery is how often a running build says it still runs.
const progressEvery = 30 * time.Second

// progress returns what a build calls every progressEvery while it runs.
func progress(name string, started time.Time, logf Logf) func() {
	return func() {
		logf.printf("still building %s: %s elapsed", name, time.Since(started).Round(time.Second))
	}
}

// buildScript runs the build as a job of a shell that leads the build's
// process group: when the shell gets the parent-death signal (the test
// binary or kopfgo testenv died, even by SIGKILL) it kills the whole group,
// go and the compilers it started, which a parent-death signal on go alone
// would leave running. $0 names the build, for recover.
const buildScript = `trap 'kill -KILL 0' TERM HUP INT; "$@" & wait $!`

// buildMarker is the shell's $0 (its command line's second word), by which
// recover tells a build group of ours from a process that reuses its id.
const buildMarker = "kopfgo-build"

// goBuild builds the main package in dir into a temporary file in binDir and
// renames it to target, so that an interrupted build never leaves a truncated
// binary under the final name. The build runs in a process group of its own,
// recorded in the lock, which dies with the caller or when ctx ends.
func goBuild(ctx context.Context, dir, binDir, target, ldflags string, lock *buildLock, tick func()) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go command is needed to build the test servers (put it on PATH, or set %s and %s): %w", EnvKubeAPIServer, EnvEtcd, err)
	}
	tmp, err := os.CreateTemp(binDir, buildPrefix+filepath.Base(target)+"-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName) // a no-op after a successful rename

	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", buildScript, buildMarker,
		goBin, "build", "-ldflags", ldflags, "-o", tmpName, ".")
	cmd.Dir = dir
	// The tools are modules of their own: a go.work of the caller's must not
	// pull them into a workspace where the replaces would not apply.
	// A user's GOFLAGS=-mod=vendor would not find the tools' dependencies.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	// Own process group, so that cancelling kills the compilers too, not
	// just go; the parent-death signal reaches the shell of buildScript.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// The spawner thread, as for the servers: the parent-death signal follows
	// the thread that forked, not the process.
	if err := startOnSpawnerThread(cmd); err != nil {
		return fmt.Errorf("starting go build in %s: %w", dir, err)
	}
	lock.record(cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ticker := time.NewTicker(progressEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			tick()
			continue
		case err = <-done:
		}
		break
	}
	lock.record(0)
	if err != nil {
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

// buildPrefix starts the names of builds' temporary outputs in the cache.
const buildPrefix = ".build-"

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

// buildLock is the cache's build lock, held while a build runs. It records
// the holder's pid and its build's process group in the lock file, so that
// a waiter can say whom it waits for and the next holder can clean up after
// a holder that died (see recover).
type buildLock struct {
	f *os.File
}

// lockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait (a blocking flock cannot be interrupted). The lock dies with the
// process, so a killed build never leaves it stuck.
func lockFile(ctx context.Context, path string, logf Logf) (*buildLock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the build lock %s: %w", path, err)
	}
	waiting := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &buildLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !waiting {
			holder := ""
			if rec, err := readLockRecord(path); err == nil && rec.pid > 0 {
				holder = fmt.Sprintf(" (pid %d)", rec.pid)
			}
			logf.printf("waiting for another process%s building the test servers (lock %s)", holder, path)
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

func (l *buildLock) unlock() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// lockRecord is the lock file's content: "pid <holder> pgid <build group>".
type lockRecord struct{ pid, pgid int }

func readLockRecord(path string) (lockRecord, error) {
	var rec lockRecord
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	_, err = fmt.Sscanf(string(data), "pid %d pgid %d", &rec.pid, &rec.pgid)
	return rec, err
}

// record writes the holder and its running build's group (0: none) into
// the lock file; best effort, as the record only serves messages and
// recovery.
func (l *buildLock) record(pgid int) {
	if err := l.f.Truncate(0); err != nil {
		return
	}
	_, _ = l.f.WriteAt([]byte(fmt.Sprintf("pid %d pgid %d\n", os.Getpid(), pgid)), 0)
}

// recover cleans up after a holder that died during a build, before a new
// build: it kills what is left of that build's process group and removes
// the temporary outputs of interrupted builds. Holding the lock proves that
// no build of a living process is running.
func (l *buildLock) recover(binDir string, logf Logf) {
	var rec lockRecord
	if _, err := fmt.Fscanf(io.NewSectionReader(l.f, 0, 1<<10), "pid %d pgid %d", &rec.pid, &rec.pgid); err == nil && rec.pgid > 0 {
		if killStaleGroup(rec.pgid) {
			logf.printf("killed the leftover build (process group %d) of pid %d, which died while building", rec.pgid, rec.pid)
		}
	}
	l.record(0)
	stale, _ := filepath.Glob(filepath.Join(binDir, buildPrefix+"*"))
	for _, f := range stale {
		if os.Remove(f) == nil {
			logf.printf("removed %s, left by an interrupted build", f)
		}
	}
}

// killStaleGroup kills process group pgid if it is a leftover build of
// ours, and reports whether it did. While any member of a group lives, its
// id is not given to a new process; so a group whose leader is gone is
// ours, and one whose leader lives is ours only if the leader is the
// build's shell.
func killStaleGroup(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false // no such group: the build died whole
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pgid)); err == nil {
		args := strings.Split(string(cmdline), "\x00")
		if len(args) < 4 || args[3] != buildMarker {
			return false // the id was reused by a process of someone else's
		}
	}
	return syscall.Kill(-pgid, syscall.SIGKILL) == nil
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
