//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/faultproxy"
)

// The bad-input table: objects, stored state and API answers of every
// malformed shape, each checked for what the user observes: a log line that
// names the object and what is wrong, the object handled safely (or left
// alone, as documented), nothing lost, no crash.

// badGVR is a CRD without a schema (any spec, even a string) and with the
// status subresource; noStatusGVR is the same without it.
var (
	badGVR      = schema.GroupVersionResource{Group: "e2e.kopfgo.dev", Version: "v1", Resource: "badinputs"}
	noStatusGVR = schema.GroupVersionResource{Group: "e2e.kopfgo.dev", Version: "v1", Resource: "nostatuses"}
)

const badCRDs = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: badinputs.e2e.kopfgo.dev}
spec:
  group: e2e.kopfgo.dev
  scope: Namespaced
  names: {kind: BadInput, plural: badinputs, singular: badinput}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: nostatuses.e2e.kopfgo.dev}
spec:
  group: e2e.kopfgo.dev
  scope: Namespaced
  names: {kind: NoStatus, plural: nostatuses, singular: nostatus}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// tally counts handler calls per handler and object, safely.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func (t *tally) add(handler, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[handler+"/"+name]++
}

func (t *tally) get(handler, name string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n[handler+"/"+name]
}

// badCase is one row of the table.
type badCase struct {
	name string
	// gvr defaults to badGVR.
	gvr *schema.GroupVersionResource
	// spec replaces the object's spec (the default is {"field": "value"});
	// noSpec leaves it out.
	spec   any
	noSpec bool
	// meta is merged into metadata at creation (labels, annotations, ...).
	meta map[string]any
	// raw, when set, is the whole body sent as is (for what Go's JSON
	// encoder would never produce).
	raw string
	// early: created before the operator starts, so that the operator's
	// first sight of it is the state given here.
	early bool
	// fault, when set, is installed on the proxy for this object's requests
	// before the object is created.
	fault *faultproxy.Rule
	// then acts on the object once it exists (and the operator runs).
	then func(t *testing.T, bc *badCtx, name string)
	// logs must each appear on a log line of this object (after its
	// "[ns/name]" prefix); noLogs must not.
	logs   []string
	noLogs []string
	// want is the object's final state; nil means handled(): a diff-base
	// and no progress left. gone means deleted.
	want func(u *unstructured.Unstructured) error
	gone bool
	// creates is how often the create handler ran (default 1; -1: any).
	creates int
	// calls are further exact handler counts, by handler id.
	calls map[string]int
}

// badCtx is what a case's actions and checks need.
type badCtx struct {
	ns    string
	log   *logSink
	proxy *faultproxy.Proxy
	calls *tally
	// release lets a blocking handler of the case's object return.
	mu      sync.Mutex
	release map[string]chan struct{}
}

func (bc *badCtx) gate(name string) chan struct{} {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.release == nil {
		bc.release = map[string]chan struct{}{}
	}
	if bc.release[name] == nil {
		bc.release[name] = make(chan struct{})
	}
	return bc.release[name]
}

// objectLines are the log lines about the object: those of its logger
// ("[ns/name] ...") and those naming it in a request ("ns/name",
// ".../ns/kind/name/status").
func (bc *badCtx) objectLines(name string) []string {
	var out []string
	for _, l := range strings.Split(bc.log.String(), "\n") {
		if mentions(l, bc.ns+"/"+name) || mentions(l, "/"+name) {
			out = append(out, l)
		}
	}
	return out
}

// mentions reports whether s holds ref not followed by more of a name.
func mentions(s, ref string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], ref)
		if j < 0 {
			return false
		}
		end := i + j + len(ref)
		if end == len(s) || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-.", rune(s[end])) {
			return true
		}
		i = end
	}
}

func (bc *badCtx) hasLine(name, substr string) bool {
	for _, l := range bc.objectLines(name) {
		if strings.Contains(l, substr) {
			return true
		}
	}
	return false
}

func (c *badCase) resource() schema.GroupVersionResource {
	if c.gvr != nil {
		return *c.gvr
	}
	return badGVR
}

func (c *badCase) body(ns string) map[string]any {
	kind := "BadInput"
	if c.resource() == noStatusGVR {
		kind = "NoStatus"
	}
	meta := map[string]any{"name": c.name, "namespace": ns}
	for k, v := range c.meta {
		meta[k] = v
	}
	obj := map[string]any{"apiVersion": "e2e.kopfgo.dev/v1", "kind": kind, "metadata": meta}
	switch {
	case c.noSpec:
	case c.spec != nil:
		obj["spec"] = c.spec
	default:
		obj["spec"] = map[string]any{"field": "value"}
	}
	return obj
}

func (c *badCase) create(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if c.raw != "" {
		rc := kube(t).CoreV1().RESTClient()
		body := strings.ReplaceAll(c.raw, "NAME", c.name)
		body = strings.ReplaceAll(body, "NS", ns)
		err := rc.Post().AbsPath("/apis/e2e.kopfgo.dev/v1/namespaces", ns, c.resource().Resource).
			SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx).Error()
		if err != nil {
			t.Fatalf("%s: create: %v", c.name, err)
		}
		return
	}
	if _, err := dyn(t).Resource(c.resource()).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: c.body(ns)}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s: create: %v", c.name, err)
	}
}

// ann is a metadata stanza with annotations.
func ann(kv ...string) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return map[string]any{"annotations": m}
}

const (
	lhc      = "kopf.zalando.org/last-handled-configuration"
	progress = "kopf.zalando.org/create_fn"
)

// corruptProgress is a case with a malformed progress record of create_fn.
func corruptProgress(name, value string) badCase {
	return badCase{name: name, early: true, meta: ann(progress, value), logs: []string{progress}}
}

// corruptDiffBase is a case with a malformed diff-base.
func corruptDiffBase(name, value string) badCase {
	return badCase{name: name, early: true, meta: ann(lhc, value), logs: []string{lhc}}
}

// onObject matches the requests about one object (and its subresources).
func onObject(name string) func(r *http.Request) bool {
	return func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/"+name) || strings.Contains(r.URL.Path, "/"+name+"/")
	}
}

// patchFault is a case where the object's patches get one error answer.
func patchFault(code int, status bool) badCase {
	which := "main"
	if status {
		which = "status"
	}
	name := fmt.Sprintf("patch-%s-%d", which, code)
	return badCase{
		name: name,
		fault: &faultproxy.Rule{Method: http.MethodPatch, Status: code, Times: 1, Match: func(r *http.Request) bool {
			return onObject(name)(r) && strings.HasSuffix(r.URL.Path, "/status") == status
		}},
		logs:    []string{fmt.Sprint(code)},
		creates: -1,
	}
}

func TestBadInput(t *testing.T) {
	ns := namespace(t)
	shared := cluster.Shared(t)
	if err := shared.Apply(context.Background(), []byte(badCRDs)); err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	bc := &badCtx{ns: ns, proxy: proxy, calls: &tally{}}

	cases := badCases()
	if only := os.Getenv("KOPFGO_BADINPUT_ONLY"); only != "" {
		cases = slices.DeleteFunc(cases, func(c badCase) bool { return !strings.Contains(c.name, only) })
	}
	observe := os.Getenv("KOPFGO_BADINPUT_OBSERVE") == "1"

	for i := range cases {
		if cases[i].early {
			cases[i].create(t, ns)
		}
	}
	for i := range cases {
		if f := cases[i].fault; f != nil {
			proxy.Add(f)
		}
	}
	record := func(id string) func(ctx context.Context, c *kopfgo.Change) (any, error) {
		return func(ctx context.Context, c *kopfgo.Change) (any, error) {
			bc.calls.add(id, c.Name)
			if strings.HasPrefix(c.Name, "block-") && id == "create_fn" {
				select {
				case <-bc.gate(c.Name):
				case <-ctx.Done():
				}
			}
			return map[string]any{"ok": id}, nil
		}
	}
	bc.log = embeddedWith(t, kopfgo.Options{Namespaces: []string{ns}, RESTConfig: proxy.Config(shared.RESTConfig())}, func(op *kopfgo.Operator) {
		for _, res := range []string{"badinputs.e2e.kopfgo.dev", "nostatuses.e2e.kopfgo.dev"} {
			op.On.Create(res, record("create_fn"), kopfgo.ID("create_fn"))
			op.On.Update(res, record("update_fn"), kopfgo.ID("update_fn"))
			op.On.Field(res, "spec.field", record("field_fn"), kopfgo.ID("field_fn"))
			op.On.Delete(res, record("delete_fn"), kopfgo.ID("delete_fn"))
			op.On.Create(res, record("labelled_fn"), kopfgo.ID("labelled_fn"), kopfgo.Labels{"filter": kopfgo.Present})
			op.On.Create(res, record("annotated_fn"), kopfgo.ID("annotated_fn"), kopfgo.Annotations{"filter": "yes"})
			op.On.Create(res, record("valued_fn"), kopfgo.ID("valued_fn"), kopfgo.Field("spec.field"), kopfgo.Value("value"))
		}
	})
	for i := range cases {
		if !cases[i].early {
			cases[i].create(t, ns)
		}
	}
	var wg sync.WaitGroup
	for i := range cases {
		if cases[i].then != nil {
			wg.Go(func() { cases[i].then(t, bc, cases[i].name) })
		}
	}
	wg.Wait()
	if observe {
		time.Sleep(25 * time.Second)
	}

	for i := range cases {
		c := &cases[i]
		t.Run(c.name, func(t *testing.T) {
			checkBadCase(t, bc, c, observe)
		})
	}
	if n := bc.log.Count("panic"); n > 0 {
		t.Errorf("%d log lines mention a panic", n)
	}
}

func checkBadCase(t *testing.T, bc *badCtx, c *badCase, observe bool) {
	res := dyn(t).Resource(c.resource()).Namespace(bc.ns)
	var u *unstructured.Unstructured
	var stateErr error
	deadline := time.Now().Add(waitLong)
	for {
		got, err := res.Get(context.Background(), c.name, metav1.GetOptions{})
		switch {
		case c.gone:
			stateErr = err
			if err == nil {
				stateErr = fmt.Errorf("still exists: finalizers %v", got.GetFinalizers())
			} else if apierrors.IsNotFound(err) {
				stateErr = nil
			}
		case err != nil:
			stateErr = err
		case c.want != nil:
			u, stateErr = got, c.want(got)
		case !handled(got):
			u, stateErr = got, fmt.Errorf("not handled: annotations %v", got.GetAnnotations())
		default:
			u, stateErr = got, nil
		}
		logsOK := true
		for _, l := range c.logs {
			logsOK = logsOK && bc.hasLine(c.name, l)
		}
		if stateErr == nil && logsOK || time.Now().After(deadline) || observe {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if observe {
		_ = u
		t.Logf("state err: %v", stateErr)
		if u != nil {
			b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": u.GetAnnotations(), "finalizers": u.GetFinalizers()}, "status": u.Object["status"]})
			t.Logf("object: %.600s", b)
		}
		for _, id := range []string{"create_fn", "update_fn", "field_fn", "delete_fn", "labelled_fn", "annotated_fn", "valued_fn"} {
			if n := bc.calls.get(id, c.name); n > 0 {
				t.Logf("calls %s = %d", id, n)
			}
		}
		for _, l := range bc.objectLines(c.name) {
			t.Logf("  %.300s", l)
		}
		return
	}
	if stateErr != nil {
		t.Errorf("final state: %v", stateErr)
	}
	for _, l := range c.logs {
		if !bc.hasLine(c.name, l) {
			t.Errorf("no log line of the object contains %q", l)
		}
	}
	for _, l := range c.noLogs {
		if bc.hasLine(c.name, l) {
			t.Errorf("a log line of the object contains %q", l)
		}
	}
	want := c.creates
	if want == 0 {
		want = 1
	}
	if want > 0 {
		if n := bc.calls.get("create_fn", c.name); n != want {
			t.Errorf("create_fn ran %d times, want %d", n, want)
		}
	}
	for id, want := range c.calls {
		if n := bc.calls.get(id, c.name); n != want {
			t.Errorf("%s ran %d times, want %d", id, n, want)
		}
	}
	if t.Failed() {
		for _, l := range bc.objectLines(c.name) {
			t.Logf("  %.300s", l)
		}
	}
}
