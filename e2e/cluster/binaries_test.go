package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The cached binaries are named by these constants, so they must follow the
// versions the tools modules actually build.
func TestVersionsMatchToolsModules(t *testing.T) {
	for _, tc := range []struct{ tool, module, version string }{
		{"kube-apiserver", "k8s.io/kubernetes", KubeAPIServerVersion},
		{"etcd", "go.etcd.io/etcd/server/v3", EtcdVersion},
	} {
		gomod, err := toolSources.ReadFile("toolsrc/" + tc.tool + "/go.mod.txt")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(gomod), tc.module+" "+tc.version+"\n") {
			t.Errorf("toolsrc/%s/go.mod.txt does not require %s %s: update the version constant with the module", tc.tool, tc.module, tc.version)
		}
	}
}

func TestCacheDir(t *testing.T) {
	t.Setenv(EnvCache, "/somewhere/else")
	if got, _ := CacheDir(); got != "/somewhere/else" {
		t.Errorf("with %s: %q", EnvCache, got)
	}
	t.Setenv(EnvCache, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if got, _ := CacheDir(); got != "/xdg/kopfgo" {
		t.Errorf("with XDG_CACHE_HOME: %q", got)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if got, _ := CacheDir(); got != "/home/u/.cache/kopfgo" {
		t.Errorf("with HOME only: %q", got)
	}
}

func TestKubeVersionLDFlags(t *testing.T) {
	got := kubeVersionLDFlags("v1.34.3")
	for _, want := range []string{"version.gitVersion=v1.34.3", "version.gitMajor=1 ", "version.gitMinor=34 "} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

func TestEnsureToolPrefersEnvironment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "etcd")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvEtcd, bin)
	t.Setenv(EnvCache, t.TempDir()) // nothing cached: a build would be needed otherwise
	got, err := ensureTool(t.Context(), tools[0], nil)
	if err != nil || got != bin {
		t.Fatalf("got %q, %v; want %q", got, err, bin)
	}

	t.Setenv(EnvEtcd, filepath.Join(t.TempDir(), "missing"))
	if _, err := ensureTool(t.Context(), tools[0], nil); err == nil || !strings.Contains(err.Error(), EnvEtcd) {
		t.Fatalf("a missing binary named by %s: error %v", EnvEtcd, err)
	}
}

func TestEnsureToolBuildsOnceIntoCache(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	// A tiny stand-in for a tools module, found through KOPFGO_TOOLS_DIR.
	toolsDir := t.TempDir()
	src := filepath.Join(toolsDir, "hello")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/hello\n\ngo 1.24\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nvar v = \"unset\"\n\nfunc main() { println(v) }\n"), 0o644))
	t.Setenv(EnvToolsDir, toolsDir)
	cache := t.TempDir()
	t.Setenv(EnvCache, cache)

	hello := tool{name: "hello", version: "v0.0.1", env: "KOPFGO_TEST_HELLO_UNSET", hint: "a second", ldflags: "-X main.v=stamped"}
	var logs []string
	logf := func(format string, args ...any) { logs = append(logs, format) }
	path, err := ensureTool(t.Context(), hello, logf)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "bin", "hello-v0.0.1"); path != want {
		t.Errorf("built into %q, want %q", path, want)
	}
	out, err := exec.Command(path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "stamped" {
		t.Errorf("the built binary says %q (%v); the ldflags were not applied", out, err)
	}
	entries, _ := os.ReadDir(filepath.Join(cache, "bin"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".build-") {
			t.Errorf("temporary build file %s left behind", e.Name())
		}
	}
	if len(logs) == 0 {
		t.Error("a build logged nothing; a cold build takes minutes and must say so")
	}

	// The second call reuses the binary: no build, so no log line.
	logs = nil
	if _, err := ensureTool(t.Context(), hello, logf); err != nil || len(logs) != 0 {
		t.Errorf("second call: %v, logs %q; want a silent reuse", err, logs)
	}
}

func TestBuildFailureLeavesNoBinary(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	toolsDir := t.TempDir()
	src := filepath.Join(toolsDir, "broken")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/broken\n\ngo 1.24\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { undefined() }\n"), 0o644))
	t.Setenv(EnvToolsDir, toolsDir)
	cache := t.TempDir()
	t.Setenv(EnvCache, cache)

	_, err := ensureTool(t.Context(), tool{name: "broken", version: "v1", env: "KOPFGO_TEST_BROKEN_UNSET"}, nil)
	if err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Fatalf("error %v, want the compiler's message", err)
	}
	entries, _ := os.ReadDir(filepath.Join(cache, "bin"))
	for _, e := range entries {
		if e.Name() != ".lock" {
			t.Errorf("a failed build left %s behind", e.Name())
		}
	}
}

func TestLockFileExcludesAndHonoursContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	lock, err := lockFile(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}

	// flock locks belong to open file descriptions, so a second open in the
	// same process contends like another process would.
	ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
	defer cancel()
	var waited []string
	if _, err := lockFile(ctx, path, func(f string, _ ...any) { waited = append(waited, f) }); err == nil {
		t.Fatal("took a lock that is held")
	}
	if len(waited) != 1 {
		t.Errorf("logged %d waiting messages, want 1", len(waited))
	}

	got := make(chan error, 1)
	go func() {
		u, err := lockFile(t.Context(), path, nil)
		if err == nil {
			u.unlock()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	lock.unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the lock was not handed over after unlock")
	}
}

func TestTail(t *testing.T) {
	if got := tail("a\nb\nc\nd\n", 2); got != "c\nd" {
		t.Errorf("got %q", got)
	}
	if got := tail("a", 5); got != "a" {
		t.Errorf("got %q", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
