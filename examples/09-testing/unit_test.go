package testing09

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/kopfgotest"
)

// The handler is a plain function: called with an argument built from a
// body, without a cluster.
func TestCreateFnLogs(t *testing.T) {
	c := kopfgotest.NewChange(map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kopf-example-1", "namespace": "default"},
	})
	var log bytes.Buffer
	c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	res, err := createFn(context.Background(), c)
	if err != nil || res != nil {
		t.Fatalf("createFn: %v, %v", res, err)
	}
	if !strings.Contains(log.String(), "Something was logged here.") {
		t.Errorf("log: %s", log.String())
	}
	if !c.Patch.IsEmpty() {
		t.Errorf("a patch: %v", c.Patch.Map())
	}
}
