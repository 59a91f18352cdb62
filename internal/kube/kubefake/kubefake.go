package kubefake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/internal/kube"
)

// newClient is a kube.Client whose lists, watches and patches are served
// by a over HTTP, and whose other calls (gets, creates, updates,
// discovery) go to dyn and disc directly, as they go to the dynamic and
// discovery clients in production.
func newClient(a *API, dyn dynamic.Interface, disc discovery.DiscoveryInterface) (*kube.Client, error) {
	c, err := kube.NewClient(&rest.Config{Host: "http://kube.fake", Transport: transport{a}}, kube.ClientOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot build the fake client: %w", err)
	}
	c.Dynamic, c.Discovery = dyn, disc
	return c, nil
}

// transport serves the API's collections and objects: GET lists and
// watches (the query's list options passed on), PATCH patches, as an API
// server answers them, with its errors as Status responses. Other requests
// are 405s.
type transport struct{ api *API }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer func() { _ = req.Body.Close() }()
	}
	p, err := parsePath(req.URL.Path)
	if err != nil {
		return statusResponse(req, apierrors.NewNotFound(schema.GroupResource{}, req.URL.Path))
	}
	ri := t.api.dyn.Resource(p.gvr)
	var r dynamic.ResourceInterface = ri
	if p.namespace != "" {
		r = ri.Namespace(p.namespace)
	}
	ctx := req.Context()
	switch {
	case req.Method == http.MethodGet && p.name == "":
		var opts metav1.ListOptions
		query := req.URL.Query()
		if err := metav1.Convert_url_Values_To_v1_ListOptions(&query, &opts, nil); err != nil {
			return statusResponse(req, apierrors.NewBadRequest(err.Error()))
		}
		if opts.Watch {
			body, err := t.api.watch(ctx, p.gvr, p.namespace, opts)
			if err != nil {
				return statusResponse(req, err)
			}
			return response(req, http.StatusOK, body), nil
		}
		list, err := r.List(ctx, opts)
		if err != nil {
			return statusResponse(req, err)
		}
		data, err := list.MarshalJSON()
		if err != nil {
			return nil, err
		}
		return response(req, http.StatusOK, io.NopCloser(bytes.NewReader(data))), nil
	case req.Method == http.MethodPatch && p.name != "":
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		var subs []string
		if p.sub != "" {
			subs = []string{p.sub}
		}
		pt := types.PatchType(strings.TrimSpace(strings.Split(req.Header.Get("Content-Type"), ";")[0]))
		obj, err := r.Patch(ctx, p.name, pt, body, metav1.PatchOptions{}, subs...)
		if err != nil {
			return statusResponse(req, err)
		}
		data, err := obj.MarshalJSON()
		if err != nil {
			return nil, err
		}
		return response(req, http.StatusOK, io.NopCloser(bytes.NewReader(data))), nil
	}
	return statusResponse(req, apierrors.NewMethodNotSupported(p.gvr.GroupResource(), req.Method))
}

// target is what a request's path names.
type target struct {
	gvr                  schema.GroupVersionResource
	namespace, name, sub string
}

// parsePath reads /api/v1/... and /apis/<group>/<version>/... paths:
// [namespaces/<ns>/]<plural>[/<name>[/<sub>]].
func parsePath(path string) (target, error) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var t target
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		t.gvr.Version, segs = segs[1], segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		t.gvr.Group, t.gvr.Version, segs = segs[1], segs[2], segs[3:]
	default:
		return t, errors.New("not a resource's path")
	}
	// namespaces/<ns>/<plural>...: a namespaced resource, unless it is a
	// Namespace's own subresource (namespaces/<name>/status).
	if len(segs) >= 3 && segs[0] == "namespaces" && (len(segs) > 3 || segs[2] != "status" && segs[2] != "finalize") {
		t.namespace, segs = segs[1], segs[2:]
	}
	if len(segs) > 3 {
		return t, errors.New("too long for a resource's path")
	}
	t.gvr.Resource = segs[0]
	if len(segs) > 1 {
		t.name = segs[1]
	}
	if len(segs) > 2 {
		t.sub = segs[2]
	}
	return t, nil
}

func response(req *http.Request, code int, body io.ReadCloser) *http.Response {
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": []string{"application/json"}},
		Body:    body,
		Request: req,
	}
}

// statusResponse answers with err's Status, as an API server does; an
// error that is not the API's (a cancelled request) is the transport's.
func statusResponse(req *http.Request, err error) (*http.Response, error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil, err
	}
	s := status.Status()
	s.Kind, s.APIVersion = "Status", "v1"
	data, merr := json.Marshal(s)
	if merr != nil {
		return nil, merr
	}
	code := int(s.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	return response(req, code, io.NopCloser(bytes.NewReader(data))), nil
}
