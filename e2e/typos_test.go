//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/internal/logging"
)

// withArgs runs an operator in-process with a command line (RunWithArgs)
// until the test ends; done gives Run's error, if it returns before.
func withArgs(t *testing.T, register func(op *kopfgo.Operator), args ...string) (log *logSink, done <-chan error) {
	t.Helper()
	log = &logSink{}
	op := kopfgo.New(kopfgo.Options{
		RESTConfig: cluster.Shared(t).RESTConfig(),
		Logger:     logging.New(logging.Config{Format: logging.FormatPlain, Level: slog.LevelDebug, Writer: log}),
	})
	register(op)
	ctx, cancel := context.WithCancel(context.Background())
	errs, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		errs <- kopfgo.RunWithArgs(ctx, op, log, append([]string{"--standalone"}, args...)...)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(waitShort):
			t.Errorf("Run did not return within %s after its context ended", waitShort)
		}
		if t.Failed() {
			t.Logf("operator log:\n%s", log)
		}
	})
	return log, errs
}

func noop(context.Context, *kopfgo.Change) (any, error) { return nil, nil }

// TestReadyzNamesAMistypedResource: a handler of "kopfexampls" (a typo of
// kopfexamples) keeps the operator not ready, /readyz saying which
// resource and what it may be a typo of; --ready-while-unresolved relaxes
// it; a resource whose CRD is created later makes the operator ready once
// it resolves.
func TestReadyzNamesAMistypedResource(t *testing.T) {
	ns := namespace(t)
	mistyped := func(op *kopfgo.Operator) { op.On.Create("kopfexampls", noop, kopfgo.ID("create_fn")) }
	const want = "unresolved resources: kopfexampls for handlers create_fn (did you mean kopfexamples?)"

	port := freeTCPPort(t)
	log, _ := withArgs(t, mistyped, "-n", ns, "--metrics-addr=127.0.0.1:"+port)
	log.WaitFor(t, "Unresolved resources cannot be served (try creating their CRDs): kopfexampls for handlers create_fn (did you mean kopfexamples?)", 1)
	eventually(t, waitShort, "/readyz to say 503 with the typo", func() (bool, error) {
		code, body := scrape(t, "http://127.0.0.1:"+port+"/readyz")
		return code == http.StatusServiceUnavailable && strings.TrimSpace(body) == "not ready: "+want, fmt.Errorf("%d %q", code, body)
	})

	port = freeTCPPort(t)
	withArgs(t, mistyped, "-n", ns, "--metrics-addr=127.0.0.1:"+port, "--ready-while-unresolved")
	eventually(t, waitShort, "/readyz to say ok, naming the typo", func() (bool, error) {
		code, body := scrape(t, "http://127.0.0.1:"+port+"/readyz")
		return code == http.StatusOK && strings.TrimSpace(body) == "ok ("+want+")", fmt.Errorf("%d %q", code, body)
	})

	group := fmt.Sprintf("g%d.readyz.e2e.kopf.dev", time.Now().UnixNano()%1e9)
	port = freeTCPPort(t)
	log, _ = withArgs(t, func(op *kopfgo.Operator) { op.On.Create("gizmos."+group, noop, kopfgo.ID("create_gizmo")) },
		"-n", ns, "--metrics-addr=127.0.0.1:"+port)
	eventually(t, waitShort, "/readyz to say 503 for the gizmos", func() (bool, error) {
		code, body := scrape(t, "http://127.0.0.1:"+port+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "unresolved resources: gizmos."+group+" for handlers create_gizmo"), fmt.Errorf("%d %q", code, body)
	})
	if err := cluster.Shared(t).Apply(context.Background(), []byte(crdYAML(group, "Gizmo", "gizmos"))); err != nil {
		t.Fatal(err)
	}
	log.WaitFor(t, "Serving gizmos.v1."+group, 1)
	eventually(t, waitLong, "/readyz to say ok once the CRD exists", func() (bool, error) {
		code, body := scrape(t, "http://127.0.0.1:"+port+"/readyz")
		return code == http.StatusOK && strings.TrimSpace(body) == "ok", fmt.Errorf("%d %q", code, body)
	})
}

// schemaCRD is a CRD whose schema declares spec.replicas only.
func schemaCRD(group string) string {
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: scales.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Scale, plural: scales, singular: scale}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
`, group)
}

// TestMistypedFieldPath: a field handler of spec.replica, which the CRD's
// schema does not declare (the API server would drop such a field, so the
// handler could never run), is a warning naming the handler and
// spec.replicas; with --strict, Run fails with ErrUnknownField.
func TestMistypedFieldPath(t *testing.T) {
	ns := namespace(t)
	group := fmt.Sprintf("g%d.fields.e2e.kopf.dev", time.Now().UnixNano()%1e9)
	if err := cluster.Shared(t).Apply(context.Background(), []byte(schemaCRD(group))); err != nil {
		t.Fatal(err)
	}
	register := func(op *kopfgo.Operator) {
		op.On.Field("scales."+group, "spec.replica", noop, kopfgo.ID("scale"))
		op.On.Field("scales."+group, "spec.replicas", noop, kopfgo.ID("scale_right"))
	}
	// Discovery lags behind a new CRD for a moment; the operator serves
	// the resource once discovery shows it, but checks the fields at start.
	eventually(t, waitLong, "discovery to show the CRD", func() (bool, error) {
		_, err := kube(t).Discovery().ServerResourcesForGroupVersion(group + "/v1")
		return err == nil, err
	})

	log, _ := withArgs(t, register, "-n", ns)
	log.WaitFor(t, "Handler scale/spec.replica: the field spec.replica is not in the schema of scales.v1."+group+" (did you mean spec.replicas?)", 1)
	log.WaitFor(t, "Serving scales.v1."+group, 1)
	if n := log.Count("Handler scale_right/spec.replicas:"); n != 0 {
		t.Errorf("%d warnings about spec.replicas, which the schema declares", n)
	}

	_, done := withArgs(t, register, "-n", ns, "--strict")
	select {
	case err := <-done:
		if !errors.Is(err, kopfgo.ErrUnknownField) || !errors.Is(err, kopfgo.ErrRegistration) ||
			!strings.Contains(err.Error(), "scale/spec.replica") || !strings.Contains(err.Error(), "did you mean spec.replicas?") {
			t.Errorf("Run with --strict = %v, want ErrUnknownField naming the handler and spec.replicas", err)
		}
	case <-time.After(waitLong):
		t.Fatal("Run with --strict did not fail")
	}
}

// TestStrictFailsOnAMistypedResource: with --strict, a mistyped resource
// fails Run, naming the handler and the resource it may be a typo of.
func TestStrictFailsOnAMistypedResource(t *testing.T) {
	ns := namespace(t)
	_, done := withArgs(t, func(op *kopfgo.Operator) { op.On.Create("kopfexampls", noop, kopfgo.ID("create_fn")) }, "-n", ns, "--strict")
	select {
	case err := <-done:
		if !errors.Is(err, kopfgo.ErrUnresolved) || !strings.Contains(err.Error(), "create_fn") || !strings.Contains(err.Error(), "did you mean kopfexamples?") {
			t.Errorf("Run with --strict = %v, want ErrUnresolved naming create_fn and kopfexamples", err)
		}
	case <-time.After(waitLong):
		t.Fatal("Run with --strict did not fail")
	}
}
