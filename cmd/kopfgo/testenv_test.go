package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/internal/cli"
)

func TestTestenvPrint(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(cluster.EnvCache, cache)
	t.Setenv(cluster.EnvEtcd, "")
	t.Setenv(cluster.EnvKubeAPIServer, "")

	// Nothing built: --print fails, naming what is missing and the command.
	var out, errOut bytes.Buffer
	err := testenv(t.Context(), true, &out, &errOut)
	var exit *cli.ExitCodeError
	if !errors.As(err, &exit) || exit.Code != cli.ExitError {
		t.Fatalf("error %v, want exit code %d", err, cli.ExitError)
	}
	for _, want := range []string{"etcd is not built", "kube-apiserver is not built", "go run github.com/kopfgo/kopfgo/cmd/kopfgo testenv"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q, want nothing to eval", out.String())
	}

	// Built (in the cache): the paths, as shell assignments.
	bin := filepath.Join(cache, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	etcd := filepath.Join(bin, "etcd-"+cluster.EtcdVersion)
	api := filepath.Join(bin, "kube-apiserver-"+cluster.KubeAPIServerVersion)
	for _, p := range []string{etcd, api} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := "export KOPFGO_ETCD=" + etcd + "\nexport KOPFGO_KUBE_APISERVER=" + api + "\n"
	for _, printOnly := range []bool{true, false} {
		out.Reset()
		errOut.Reset()
		if err := testenv(t.Context(), printOnly, &out, &errOut); err != nil {
			t.Fatalf("print=%v: %v\n%s", printOnly, err, errOut.String())
		}
		if out.String() != want {
			t.Errorf("print=%v: stdout %q, want %q", printOnly, out.String(), want)
		}
	}
}
