package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/resources"
)

var kex = resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Kind: "KopfExample", ShortNames: []string{"kex"}, Preferred: true, Namespaced: true}

func handler(t *testing.T, kind handlers.AdmissionKind, id string, fn handlers.AdmissionFunc, configure func(*handling.AdmissionHandler)) *handling.AdmissionHandler {
	t.Helper()
	var reg handling.Registry
	reg.AddAdmission(handling.AdmissionRegistration{Resource: "kex", Kind: kind, Fn: fn, Configure: func(h *handling.AdmissionHandler) {
		h.ID = id
		if configure != nil {
			configure(h)
		}
	}})
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	return reg.Admissions()[0]
}

func engine(hs ...*handling.AdmissionHandler) *Engine {
	return &Engine{
		Handlers: hs, Logger: slog.New(slog.DiscardHandler),
		Resolve: func(g, v, p string) (resources.Resource, bool) {
			return kex, g == kex.Group && v == kex.Version && p == kex.Plural
		},
	}
}

func reviewJSON(op string, obj map[string]any, dryRun bool) []byte {
	data, _ := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": "u-1", "operation": op, "dryRun": dryRun,
			"resource": map[string]any{"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"},
			"userInfo": map[string]any{"username": "admin"},
			"object":   obj,
		},
	})
	return data
}

type answer struct {
	Response struct {
		UID       string   `json:"uid"`
		Allowed   bool     `json:"allowed"`
		Warnings  []string `json:"warnings"`
		Patch     []byte   `json:"patch"`
		PatchType string   `json:"patchType"`
		Status    struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"status"`
	} `json:"response"`
}

func ask(t *testing.T, e *Engine, webhook string, data []byte) answer {
	t.Helper()
	out, status, err := e.Answer(context.Background(), data, webhook, nil, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("status %d: %v", status, err)
	}
	var a answer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

var obj = map[string]any{
	"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
	"metadata": map[string]any{"name": "kex1", "namespace": "default", "labels": map[string]any{"app": "x"}},
	"spec":     map[string]any{"field": "wrong", "items": []any{"a", "b", "c"}, "drop": 1},
}

// All validating handlers run, and an AdmissionError is preferred over an
// earlier arbitrary error, as Kopf's build_response orders them.
func TestValidatingFirstAdmissionErrorWins(t *testing.T) {
	ran := 0
	plain := handler(t, handlers.Validating, "plain", func(ctx context.Context, a *handlers.Admission) error {
		ran++
		a.Warnings = append(a.Warnings, "one")
		return errors.New("boom")
	}, nil)
	adm := handler(t, handlers.Validating, "adm", func(ctx context.Context, a *handlers.Admission) error {
		ran++
		a.Warnings = append(a.Warnings, "two")
		return &handlers.AdmissionError{Message: "Meh!", Code: 555}
	}, nil)
	a := ask(t, engine(plain, adm), "", reviewJSON("CREATE", obj, false))
	if a.Response.Allowed || a.Response.Status.Message != "Meh!" || a.Response.Status.Code != 555 || a.Response.UID != "u-1" {
		t.Errorf("answer = %+v", a.Response)
	}
	if ran != 2 || !reflect.DeepEqual(a.Response.Warnings, []string{"one", "two"}) {
		t.Errorf("ran %d, warnings %v", ran, a.Response.Warnings)
	}
	// Addressed to one webhook: only that handler runs.
	a = ask(t, engine(plain, adm), "plain", reviewJSON("CREATE", obj, false))
	if a.Response.Status.Message != "boom" || a.Response.Status.Code != 500 {
		t.Errorf("plain only: %+v", a.Response)
	}
}

func TestPanicRejectsAndDryRunReachesHandlers(t *testing.T) {
	var dry bool
	h := handler(t, handlers.Validating, "p", func(ctx context.Context, a *handlers.Admission) error {
		dry = a.DryRun
		panic("oops")
	}, nil)
	a := ask(t, engine(h), "", reviewJSON("CREATE", obj, true))
	if a.Response.Allowed || !strings.Contains(a.Response.Status.Message, "oops") || a.Response.Status.Code != 500 || !dry {
		t.Errorf("answer = %+v, dry %v", a.Response, dry)
	}
	// With IgnoreFailures, the panic fails the call instead, so that the
	// API server's failurePolicy Ignore admits the request.
	h.IgnoreFailures = true
	_, status, err := engine(h).Answer(context.Background(), reviewJSON("CREATE", obj, false), "", nil, nil)
	if status != http.StatusInternalServerError || err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("with IgnoreFailures: %d %v", status, err)
	}
}

// The mutations of all mutating handlers become one minimal JSON patch.
func TestMutationsMinimalJSONPatch(t *testing.T) {
	m1 := handler(t, handlers.Mutating, "m1", func(ctx context.Context, a *handlers.Admission) error {
		a.Patch.Labels()["added"] = "yes"
		a.Patch.Spec()["drop"] = nil
		return nil
	}, nil)
	m2 := handler(t, handlers.Mutating, "m2", func(ctx context.Context, a *handlers.Admission) error {
		a.Patch.Spec()["default"] = 5
		a.Patch.Fns = append(a.Patch.Fns, func(body map[string]any) error {
			body["spec"].(map[string]any)["items"].([]any)[1] = "B"
			return nil
		})
		return nil
	}, nil)
	a := ask(t, engine(m1, m2), "", reviewJSON("CREATE", obj, false))
	if !a.Response.Allowed || a.Response.PatchType != "JSONPatch" {
		t.Fatalf("answer = %+v", a.Response)
	}
	var ops []map[string]any
	if err := json.Unmarshal(a.Response.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, op := range ops {
		got[op["op"].(string)+" "+op["path"].(string)] = op["value"]
	}
	want := map[string]any{
		"add /metadata/labels/added": "yes", "remove /spec/drop": nil,
		"add /spec/default": 5.0, "replace /spec/items/1": "B",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ops = %v", ops)
	}
	// Applied as the API server applies it (RFC 6902), the patch gives the
	// object the handlers meant.
	jp, err := jsonpatch.DecodePatch(a.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := json.Marshal(obj)
	applied, err := jp.Apply(orig)
	if err != nil {
		t.Fatal(err)
	}
	var result map[string]any
	_ = json.Unmarshal(applied, &result)
	spec := result["spec"].(map[string]any)
	if spec["default"] != 5.0 || spec["drop"] != nil || fmt.Sprint(spec["items"]) != "[a B c]" ||
		result["metadata"].(map[string]any)["labels"].(map[string]any)["added"] != "yes" {
		t.Errorf("applied = %v", result)
	}
	// Nothing changed: no patch at all.
	noop := handler(t, handlers.Mutating, "noop", func(ctx context.Context, a *handlers.Admission) error {
		a.Patch.Spec()["field"] = "wrong"
		return nil
	}, nil)
	if a := ask(t, engine(noop), "", reviewJSON("CREATE", obj, false)); a.Response.Patch != nil || !a.Response.Allowed {
		t.Errorf("noop answer = %+v", a.Response)
	}
}

// Mutating handlers skip deletions unless registered for DELETE alone;
// label filters apply; a subresource handler needs SubResource.
func TestHandlerSelection(t *testing.T) {
	var calls []string
	rec := func(id string) handlers.AdmissionFunc {
		return func(ctx context.Context, a *handlers.Admission) error { calls = append(calls, id); return nil }
	}
	star := "*"
	hs := []*handling.AdmissionHandler{
		handler(t, handlers.Mutating, "mut", rec("mut"), nil),
		handler(t, handlers.Mutating, "mutdel", rec("mutdel"), func(h *handling.AdmissionHandler) { h.Operations = []string{"DELETE"} }),
		handler(t, handlers.Validating, "labelled", rec("labelled"), func(h *handling.AdmissionHandler) { h.Filters.AddLabels(map[string]any{"app": "y"}) }),
		handler(t, handlers.Validating, "subs", rec("subs"), func(h *handling.AdmissionHandler) { h.SubResource = &star }),
	}
	ask(t, engine(hs...), "", reviewJSON("DELETE", obj, false))
	if !reflect.DeepEqual(calls, []string{"mutdel", "subs"}) {
		t.Errorf("calls = %v", calls)
	}
}

func TestMalformedReviews(t *testing.T) {
	e := engine(handler(t, handlers.Validating, "v", func(ctx context.Context, a *handlers.Admission) error { return nil }, nil))
	for name, tc := range map[string]struct {
		body   string
		status int
	}{
		"not json":      {`{"request": `, 400},
		"no request":    {`{"kind": "AdmissionReview"}`, 400},
		"no user":       {`{"request": {"uid": "1", "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"}, "object": {}}}`, 400},
		"no object":     {`{"request": {"uid": "1", "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"}, "userInfo": {}}}`, 400},
		"unknown thing": {`{"request": {"uid": "1", "resource": {"group": "", "version": "v1", "resource": "pods"}, "userInfo": {}, "object": {}}}`, 404},
	} {
		_, status, err := e.Answer(context.Background(), []byte(tc.body), "", nil, nil)
		if status != tc.status || err == nil || err.Error() == "" {
			t.Errorf("%s: status %d, err %v", name, status, err)
		}
	}
}

func TestBuildWebhooks(t *testing.T) {
	status := "status"
	hs := []*handling.AdmissionHandler{
		handler(t, handlers.Validating, "validate_fn/spec.field", nil2, func(h *handling.AdmissionHandler) {
			h.Filters.AddLabels(map[string]any{"a": "1", "b": handlers.Present, "c": handlers.Absent, "d": func(any) bool { return true }})
			h.Operations = []string{"CREATE", "UPDATE"}
			h.SideEffects, h.IgnoreFailures = true, true
		}),
		handler(t, handlers.Validating, "ValidateStatus", nil2, func(h *handling.AdmissionHandler) { h.SubResource = &status; h.Persistent = true }),
		handler(t, handlers.Mutating, "mut", nil2, nil),
	}
	cc := ClientConfig{URL: "https://127.0.0.1:9443/", CABundle: []byte("CA")}
	got := BuildWebhooks(hs, handlers.Validating, []resources.Resource{kex, {Group: "", Version: "v1", Plural: "pods", Kind: "Pod", Preferred: true}}, "auto.kopf.dev", cc, false)
	data, _ := json.Marshal(got)
	want := `[{"admissionReviewVersions":["v1","v1beta1"],"clientConfig":{"caBundle":"Q0E=","url":"https://127.0.0.1:9443/validate_fn%2Fspec.field"},` +
		`"failurePolicy":"Ignore","matchPolicy":"Equivalent","name":"validate-fn.spec.field.auto.kopf.dev",` +
		`"objectSelector":{"matchExpressions":[{"key":"a","operator":"In","values":["1"]},{"key":"b","operator":"Exists"},{"key":"c","operator":"DoesNotExist"}]},` +
		`"rules":[{"apiGroups":["kopf.dev"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["kopfexamples"],"scope":"*"}],"sideEffects":"NoneOnDryRun","timeoutSeconds":30},` +
		`{"admissionReviewVersions":["v1","v1beta1"],"clientConfig":{"caBundle":"Q0E=","url":"https://127.0.0.1:9443/ValidateStatus"},` +
		`"failurePolicy":"Fail","matchPolicy":"Equivalent","name":"validatestatus.auto.kopf.dev",` +
		`"rules":[{"apiGroups":["kopf.dev"],"apiVersions":["v1"],"operations":["*"],"resources":["kopfexamples/status"],"scope":"*"}],"sideEffects":"None","timeoutSeconds":30}]`
	if string(data) != want {
		t.Errorf("webhooks =\n%s\nwant\n%s", data, want)
	}
	persistent := BuildWebhooks(hs, handlers.Validating, []resources.Resource{kex}, "auto.kopf.dev", cc, true)
	if len(persistent) != 1 {
		t.Errorf("persistent only = %v", persistent)
	}
}

func nil2(ctx context.Context, a *handlers.Admission) error { return nil }

// The server speaks TLS only, with a generated certificate that its
// published CA bundle verifies; a plain-HTTP request is refused.
func TestServerTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{
		Config:   config.WebhookServer{Addr: "127.0.0.1", Path: "/hooks", CADump: filepath.Join(t.TempDir(), "ca.pem")},
		Listener: ln, Logger: slog.New(slog.DiscardHandler),
		Handler: engine(handler(t, handlers.Validating, "v/spec.x", func(ctx context.Context, a *handlers.Admission) error {
			return &handlers.AdmissionError{Message: "no", Code: 403}
		}, nil)),
	}
	srv.Handler.(*Engine).Root = "/hooks"
	cc, pool := serve(t, srv)
	if !strings.HasPrefix(cc.URL, "https://127.0.0.1:") || !strings.HasSuffix(cc.URL, "/hooks") {
		t.Errorf("url = %s", cc.URL)
	}
	if dumped, err := os.ReadFile(srv.Config.CADump); err != nil || string(dumped) != string(cc.CABundle) {
		t.Errorf("CADump: %v, %q", err, dumped)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	// The handler id is the URL's last segment, escaped as the managed
	// configurations escape it.
	resp, err := client.Post(cc.URL+"/"+url.PathEscape("v/spec.x"), "application/json", strings.NewReader(string(reviewJSON("CREATE", obj, false))))
	if err != nil {
		t.Fatal(err)
	}
	var a answer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	if a.Response.Allowed || a.Response.Status.Code != 403 {
		t.Errorf("answer = %+v", a.Response)
	}
	resp, err = client.Post(cc.URL+"/v", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "malformed AdmissionReview") {
		t.Errorf("malformed: %d %s", resp.StatusCode, body)
	}
	plain := strings.Replace(cc.URL, "https://", "http://", 1)
	resp, err = http.Post(plain+"/v", "application/json", strings.NewReader(string(reviewJSON("CREATE", obj, false))))
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || strings.Contains(string(body), "allowed") {
			t.Errorf("plain HTTP answered %d: %s", resp.StatusCode, body)
		}
	}
}

// serve runs srv until the test ends, and returns the client config it
// published first and a pool that trusts its CA bundle.
func serve(tb testing.TB, srv *Server) (ClientConfig, *x509.CertPool) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	configs := make(chan ClientConfig, 2)
	done := make(chan error)
	go func() { done <- srv.Run(ctx, func(cc ClientConfig) { configs <- cc }) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Error(err)
		}
	})
	cc := <-configs
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cc.CABundle) {
		tb.Fatal("the server's CA bundle holds no certificate")
	}
	return cc, pool
}

// The resolver knows only the resources some handler serves (Kopf's 404
// for the others).
func TestResolverKnowsServedResourcesOnly(t *testing.T) {
	pods := resources.Resource{Version: "v1", Plural: "pods", Kind: "Pod", Preferred: true}
	r := &resolver{handlers: []*handling.AdmissionHandler{handler(t, handlers.Validating, "v", nil2, nil)}, all: []resources.Resource{kex, pods}}
	if res, ok := r.lookup("kopf.dev", "v1", "kopfexamples"); !ok || res.Kind != "KopfExample" {
		t.Errorf("kopfexamples: %v %v", res, ok)
	}
	if _, ok := r.lookup("", "v1", "pods"); ok {
		t.Error("pods are served without a handler")
	}
	if got := r.served(); len(got) != 1 || got[0].Plural != "kopfexamples" {
		t.Errorf("served = %v", got)
	}
}

// Every request reaches Observe once, with the webhook it named (unknown
// names folded into one label), the status answered, and the time the
// answer took on the engine's clock.
func TestEngineObservesEveryRequest(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
	check := handler(t, handlers.Validating, "check", func(ctx context.Context, a *handlers.Admission) error {
		clk.SetTime(clk.Now().Add(7 * time.Millisecond)) // the handler's own time
		return &handlers.AdmissionError{Message: "no", Code: 422}
	}, nil)
	boom := handler(t, handlers.Validating, "boom", func(ctx context.Context, a *handlers.Admission) error { panic("boom") }, func(h *handling.AdmissionHandler) { h.IgnoreFailures = true })
	type seen struct {
		webhook string
		status  int
		d       time.Duration
	}
	var got []seen
	e := engine(check, boom)
	e.Root, e.Clock = "/hooks", clk
	e.Observe = func(webhook string, status int, d time.Duration) { got = append(got, seen{webhook, status, d}) }
	for _, rq := range []struct{ method, path, body string }{
		{http.MethodPost, "/hooks/check", string(reviewJSON("CREATE", obj, false))}, // rejected: still a 200
		{http.MethodPost, "/hooks/no-such-handler", string(reviewJSON("CREATE", obj, false))},
		{http.MethodPost, "/hooks/check", `{"request": `},
		{http.MethodGet, "/hooks/check", ""},
		{http.MethodPost, "/hooks/boom", string(reviewJSON("CREATE", obj, false))},
		{http.MethodPost, "/hooks", string(reviewJSON("DELETE", obj, false))}, // the root: every handler, boom's failure fails it
	} {
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(rq.method, rq.path, strings.NewReader(rq.body)))
	}
	want := []seen{
		{"check", 200, 7 * time.Millisecond},
		{"unknown", 200, 0},
		{"check", 400, 0},
		{"check", 405, 0},
		{"boom", 500, 0},
		{"", 500, 7 * time.Millisecond},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("observed %+v,\nwant %+v", got, want)
	}
}
