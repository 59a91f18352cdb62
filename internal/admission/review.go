package admission

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/wI2L/jsondiff"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// maxReviewBytes bounds a review's body: the API server's own limit on an
// object is 3 MiB, and a review holds two of them.
const maxReviewBytes = 8 << 20

// reviewOf is an AdmissionReview (admission.k8s.io/v1 or v1beta1) as far
// as its answer needs it, its objects decoded as O: whole and unstructured
// for the handlers (review), or their metadata alone for the built-in shard
// label (labelReview).
type reviewOf[O any] struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Request    *requestOf[O] `json:"request"`
}

type review = reviewOf[map[string]any]

type requestOf[O any] struct {
	UID      string `json:"uid"`
	Resource *struct {
		Group    string `json:"group"`
		Version  string `json:"version"`
		Resource string `json:"resource"`
	} `json:"resource"`
	SubResource string         `json:"subResource"`
	Operation   string         `json:"operation"`
	UserInfo    map[string]any `json:"userInfo"`
	Object      *O             `json:"object"`
	OldObject   *O             `json:"oldObject"`
	DryRun      *bool          `json:"dryRun"`
}

// badReview is a request that is not a usable AdmissionReview (Kopf's
// WebhookError): HTTP 400, the API server's call was wrong, not the
// operation under review.
type badReview struct{ msg string }

func (e *badReview) Error() string { return e.msg }

// Engine answers admission reviews with the registered handlers.
type Engine struct {
	Handlers []*handling.AdmissionHandler
	// Resolve finds the discovered resource of a request's group, version
	// and plural; false: no handler serves it (HTTP 404).
	Resolve func(group, version, plural string) (resources.Resource, bool)
	Logger  *slog.Logger
	// Memo is copied for every request (memos of admissions are
	// ephemeral).
	Memo *handlers.Memo
	// Root is the server's root path; the segment after it names the
	// webhook (handler id).
	Root string
	// Observe, when set, is told of every request: the webhook it named
	// (a handler's id, "" for the root, "unknown" for a name no handler
	// has, so that a caller cannot grow the labels), the HTTP status
	// answered, and how long the answer took.
	Observe func(webhook string, status int, d time.Duration)
	// Clock times the answers for Observe; nil: the real clock.
	Clock clock.PassiveClock
}

// ServeHTTP answers one review. Errors of the call itself are HTTP errors
// with a message (400 malformed, 404 unknown resource, 405 not a POST);
// the handlers' verdict is an HTTP 200 AdmissionReview, rejections included,
// as Kubernetes expects.
func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// r.URL.Path is already unescaped: "check%2Fspec.x" is "check/spec.x".
	webhook := strings.Trim(strings.TrimPrefix(r.URL.Path, e.Root), "/")
	status := http.StatusOK
	if e.Observe != nil {
		clk := e.Clock
		if clk == nil {
			clk = clock.RealClock{}
		}
		start := clk.Now()
		defer func() { e.Observe(e.known(webhook), status, clk.Since(start)) }() // after the recovery below
	}
	fail := func(msg string, code int) {
		status = code
		http.Error(w, msg, code)
	}
	defer func() {
		// The handlers' panics are caught where they run; this is for
		// kopfgo's own: the request fails, never the operator.
		if v := recover(); v != nil {
			e.Logger.Error(fmt.Sprintf("Admission request failed: panic: %v", v))
			fail("internal error of the webhook server", http.StatusInternalServerError)
		}
	}()
	if r.Method != http.MethodPost {
		fail("admission reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err != nil {
		fail(fmt.Sprintf("cannot read the request: %v", err), http.StatusBadRequest)
		return
	}
	resp, code, err := e.Answer(r.Context(), data, webhook, r.Header, r.TLS)
	if err != nil {
		fail(err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}

// known is the webhook as Observe is told it: a handler's id, "" for the
// root, or "unknown".
func (e *Engine) known(webhook string) string {
	if webhook == "" {
		return ""
	}
	for _, h := range e.Handlers {
		if h.ID == webhook {
			return webhook
		}
	}
	return "unknown"
}

// Answer decodes a review, runs the handlers and encodes the response. An
// error comes with its HTTP status.
func (e *Engine) Answer(ctx context.Context, data []byte, webhook string, headers http.Header, conn *tls.ConnectionState) ([]byte, int, error) {
	if h, rule := e.builtin(webhook); rule != nil {
		return rule.answer(ctx, e, h, data)
	}
	var rv review
	if err := json.Unmarshal(data, &rv); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("malformed AdmissionReview: %w", err)
	}
	req, res, err := e.decode(&rv)
	if err != nil {
		return nil, failed(err), err
	}
	req.Webhook = webhook
	req.Headers = headers
	if conn != nil && len(conn.PeerCertificates) > 0 {
		req.SSLPeer = conn.PeerCertificates[0]
	}
	req.Logger = logging.WithObject(e.Logger, objectRef(res, req.New, req.Old))
	if e.Memo != nil {
		req.Memo = e.Memo.Copy()
	} else {
		req.Memo = &handlers.Memo{}
	}
	out := handling.ServeAdmission(ctx, e.Handlers, req)
	if out.Failure != nil {
		// A panic where failures are to be ignored: fail the call, so that
		// the API server's failurePolicy Ignore admits the request.
		return nil, http.StatusInternalServerError, out.Failure
	}
	resp, err := e.respond(&rv, out)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	return resp, http.StatusOK, nil
}

// builtin is the built-in handler the webhook names, and its rule; nil if
// it names another or none.
func (e *Engine) builtin(webhook string) (*handling.AdmissionHandler, *shardRule) {
	if webhook == "" {
		return nil, nil
	}
	for _, h := range e.Handlers {
		if rule, ok := h.Builtin.(*shardRule); ok && h.ID == webhook {
			return h, rule
		}
	}
	return nil, nil
}

// decode checks the review and makes the handlers' request of it.
func (e *Engine) decode(rv *review) (handling.AdmissionRequest, resources.Resource, error) {
	res, err := checkReview(e, rv)
	if err != nil {
		return handling.AdmissionRequest{}, resources.Resource{}, err
	}
	rq := rv.Request
	return handling.AdmissionRequest{
		Resource: res, Operation: rq.Operation, SubResource: rq.SubResource,
		DryRun: rq.DryRun != nil && *rq.DryRun, UserInfo: rq.UserInfo,
		Old: deref(rq.OldObject), New: deref(rq.Object),
	}, res, nil
}

// checkReview is Kopf's MissingDataError and UnknownResourceError: what
// every answer needs is there, and the resource is served.
func checkReview[O any](e *Engine, rv *reviewOf[O]) (resources.Resource, error) {
	rq := rv.Request
	switch {
	case rq == nil:
		return resources.Resource{}, &badReview{"malformed AdmissionReview: the request is missing"}
	case rq.Resource == nil:
		return resources.Resource{}, &badReview{"malformed AdmissionReview: the resource is missing"}
	case rq.UserInfo == nil:
		return resources.Resource{}, &badReview{"User info is missing from the admission request."}
	case rq.Object == nil && rq.OldObject == nil:
		return resources.Resource{}, &badReview{"Either old or new object is missing from the admission request."}
	}
	res, ok := e.Resolve(rq.Resource.Group, rq.Resource.Version, rq.Resource.Resource)
	if !ok {
		return resources.Resource{}, fmt.Errorf("The specified resource has no handlers: %s/%s/%s",
			rq.Resource.Group, rq.Resource.Version, rq.Resource.Resource)
	}
	return res, nil
}

func deref[O any](o *O) O {
	var zero O
	if o == nil {
		return zero
	}
	return *o
}

// failed is the HTTP status of a review checkReview refuses.
func failed(err error) int {
	var bad *badReview
	if errors.As(err, &bad) {
		return http.StatusBadRequest
	}
	return http.StatusNotFound
}

// reviewAnswer is the AdmissionReview of an answer.
type reviewAnswer struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Response   reviewResponse `json:"response"`
}

type reviewResponse struct {
	UID      string   `json:"uid"`
	Allowed  bool     `json:"allowed"`
	Warnings []string `json:"warnings,omitempty"`
	Status   *struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	} `json:"status,omitempty"`
	Patch     []byte `json:"patch,omitempty"` // base64 in JSON, as the API expects
	PatchType string `json:"patchType,omitempty"`
}

// answer is the answer to the review, allowed, as Kopf's build_response
// begins it: the request's apiVersion and kind, and its uid.
func (rv *reviewOf[O]) answer() reviewAnswer {
	a := reviewAnswer{APIVersion: rv.APIVersion, Kind: rv.Kind, Response: reviewResponse{UID: rv.Request.UID, Allowed: true}}
	if a.APIVersion == "" {
		a.APIVersion = "admission.k8s.io/v1"
	}
	if a.Kind == "" {
		a.Kind = "AdmissionReview"
	}
	return a
}

// refuse rejects the answer with this message and code.
func (r *reviewResponse) refuse(msg string, code int) {
	r.Allowed = false
	r.Status = &struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	}{msg, code}
}

// respond builds the AdmissionReview answer as Kopf's build_response does:
// allowed when no handler failed, the warnings, the chosen error's message
// and code (500 unless an AdmissionError says otherwise), and the JSON patch
// of the mutations.
func (e *Engine) respond(rv *review, out handling.AdmissionOutcome) ([]byte, error) {
	a := rv.answer()
	resp := &a.Response
	resp.Warnings = out.Warnings
	if out.Err == nil {
		ops, err := JSONPatch(out)
		if err != nil {
			resp.refuse(err.Error(), 500)
		} else if len(ops) > 0 {
			raw, err := json.Marshal(ops)
			if err != nil {
				return nil, fmt.Errorf("cannot encode the JSON patch: %w", err)
			}
			resp.Patch, resp.PatchType = raw, "JSONPatch"
		}
	} else {
		code := 500
		var adm *handlers.AdmissionError
		if errors.As(out.Err, &adm) && adm.Code != 0 {
			code = adm.Code
		}
		msg := out.Err.Error()
		if msg == "" {
			msg = fmt.Sprintf("%T", out.Err) // Kopf: repr() of a message-less error
		}
		resp.refuse(msg, code)
	}
	return json.Marshal(a)
}

// JSONPatch is the RFC 6902 patch of the mutating handlers' changes: the
// object with the merge patch and the patch functions applied, compared with
// the object as it came (jsondiff), so that only what changed is sent;
// nothing for an empty patch. No "test" operations: the API server applies
// it to exactly the object it sent.
func JSONPatch(out handling.AdmissionOutcome) (jsondiff.Patch, error) {
	if out.Patch == nil || (out.Patch.IsEmpty() && len(out.Patch.Fns) == 0) || out.Body == nil {
		return nil, nil
	}
	after, err := out.Patch.Transform(out.Body)
	if err != nil {
		return nil, fmt.Errorf("cannot apply the mutations: %w", err)
	}
	ops, err := jsondiff.Compare(out.Body, after)
	if err != nil {
		return nil, fmt.Errorf("cannot compute the JSON patch: %w", err)
	}
	return ops, nil
}

// objectRef names the object in the log lines of its handlers.
func objectRef(res resources.Resource, bodies ...map[string]any) logging.ObjectRef {
	for _, b := range bodies {
		if b == nil {
			continue
		}
		meta, _ := b["metadata"].(map[string]any)
		str := func(k string) string { s, _ := meta[k].(string); return s }
		return refOf(res, str("name"), str("generateName"), str("uid"), str("namespace"))
	}
	return logging.ObjectRef{APIVersion: res.APIVersion(), Kind: res.Kind}
}

// refOf names an object of these fields, by its generateName while it has
// no name.
func refOf(res resources.Resource, name, generateName, uid, namespace string) logging.ObjectRef {
	if name == "" {
		name = generateName
	}
	return logging.ObjectRef{APIVersion: res.APIVersion(), Kind: res.Kind, Name: name, UID: uid, Namespace: namespace}
}
