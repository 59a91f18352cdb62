package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/kopfgo/kopfgo/internal/conventions"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/resources"
)

const testShardLabel = "shard.kopfgo.dev/op"

func shardLabelling(t *testing.T, inScope func(string) bool) *handling.AdmissionHandler {
	t.Helper()
	sel, err := resources.Parse("kopfexamples.kopf.dev")
	if err != nil {
		t.Fatal(err)
	}
	hs := ShardLabelling("op", 4, []resources.Selector{sel}, inScope)
	if len(hs) != 1 || hs[0].ID != "shard.kopfgo.dev/kopfexamples.kopf.dev" {
		t.Fatalf("handlers = %v", hs)
	}
	return hs[0]
}

// applied is the object after the answer's JSON patch, applied as the API
// server applies it (RFC 6902); the object itself if there is no patch.
func applied(t *testing.T, a answer, body map[string]any) map[string]any {
	t.Helper()
	if !a.Response.Allowed {
		t.Fatalf("rejected: %+v", a.Response)
	}
	orig, _ := json.Marshal(body)
	if len(a.Response.Patch) == 0 {
		return body
	}
	if a.Response.PatchType != "JSONPatch" {
		t.Fatalf("patchType = %q", a.Response.PatchType)
	}
	jp, err := jsonpatch.DecodePatch(a.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jp.Apply(orig)
	if err != nil {
		t.Fatal(err)
	}
	var result map[string]any
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatal(err)
	}
	return result
}

func kexWith(meta map[string]any) map[string]any {
	return map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": meta, "spec": map[string]any{"field": 1}}
}

// A new object gets the label of its shard by the rule the coordinator
// follows (conventions.Shard of its namespace and name), in the labels it
// has or in new ones; a label already there, an object without a name
// yet, an update and an object of a namespace not served get no patch.
func TestShardLabellingPatch(t *testing.T) {
	shard := strconv.Itoa(conventions.Shard("default", "kex1", 4))
	cases := []struct {
		name string
		op   string
		meta map[string]any
		want map[string]any // the labels after the patch; nil: no patch
	}{
		{"no label: added", "CREATE",
			map[string]any{"name": "kex1", "namespace": "default", "labels": map[string]any{"app": "x"}},
			map[string]any{"app": "x", testShardLabel: shard}},
		{"no labels at all: created", "CREATE",
			map[string]any{"name": "kex1", "namespace": "default"},
			map[string]any{testShardLabel: shard}},
		{"a label there: kept", "CREATE",
			map[string]any{"name": "kex1", "namespace": "default", "labels": map[string]any{testShardLabel: "9"}}, nil},
		{"another operator's shard label: ours added", "CREATE",
			map[string]any{"name": "kex1", "namespace": "default", "labels": map[string]any{"shard.kopfgo.dev/other": "0"}},
			map[string]any{"shard.kopfgo.dev/other": "0", testShardLabel: shard}},
		{"generateName, no name yet: left to the coordinator", "CREATE",
			map[string]any{"generateName": "kex-", "namespace": "default"}, nil},
		{"an update: untouched", "UPDATE",
			map[string]any{"name": "kex1", "namespace": "default"}, nil},
		{"a namespace not served: untouched", "CREATE",
			map[string]any{"name": "kex1", "namespace": "elsewhere"}, nil},
	}
	h := shardLabelling(t, func(ns string) bool { return ns == "default" })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := kexWith(c.meta)
			a := ask(t, engine(h), h.ID, reviewJSON(c.op, body, false))
			if c.want == nil {
				if len(a.Response.Patch) != 0 || !a.Response.Allowed {
					t.Errorf("answer = %+v, patch %s; want allowed, no patch", a.Response, a.Response.Patch)
				}
				return
			}
			got, _ := applied(t, a, body)["metadata"].(map[string]any)["labels"].(map[string]any)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("labels = %v, want %v (patch %s)", got, c.want, a.Response.Patch)
			}
		})
	}
}

// The shard's number follows the name: two names of different shards get
// different labels (the rule is not a constant).
func TestShardLabellingFollowsTheName(t *testing.T) {
	h := shardLabelling(t, nil)
	seen := map[string]bool{}
	for i := range 20 {
		name := "kex-" + strconv.Itoa(i)
		body := kexWith(map[string]any{"name": name, "namespace": "default"})
		labels := applied(t, ask(t, engine(h), h.ID, reviewJSON("CREATE", body, false)), body)["metadata"].(map[string]any)["labels"].(map[string]any)
		if got, want := labels[testShardLabel], strconv.Itoa(conventions.Shard("default", name, 4)); got != want {
			t.Errorf("%s: label %v, want %s", name, got, want)
		}
		seen[labels[testShardLabel].(string)] = true
	}
	if len(seen) != 4 {
		t.Errorf("20 names fell in shards %v, want all 4", seen)
	}
}

// A user's mutating handler and the labelling both apply: in one request
// (a webhook that names no handler) their changes go into one patch; the
// labelling, after the user's, sees the user's labels and keeps a shard
// label the user set.
func TestShardLabellingWithAUsersMutation(t *testing.T) {
	user := handler(t, handlers.Mutating, "mutate", func(_ context.Context, a *handlers.Admission) error {
		a.Patch.Labels()["mutated"] = "yes"
		if a.Name == "chosen" {
			a.Patch.Labels()[testShardLabel] = "3"
		}
		return nil
	}, nil)
	h := shardLabelling(t, nil)
	for name, want := range map[string]string{"kex1": strconv.Itoa(conventions.Shard("default", "kex1", 4)), "chosen": "3"} {
		body := kexWith(map[string]any{"name": name, "namespace": "default"})
		labels := applied(t, ask(t, engine(user, h), "", reviewJSON("CREATE", body, false)), body)["metadata"].(map[string]any)["labels"].(map[string]any)
		if labels["mutated"] != "yes" || labels[testShardLabel] != want {
			t.Errorf("%s: labels = %v, want mutated=yes and %s=%s", name, labels, testShardLabel, want)
		}
	}
}

// The labelling's webhooks are for CREATE only and never block a creation
// (failurePolicy Ignore), and come after the user's in the configuration.
func TestShardLabellingWebhooks(t *testing.T) {
	hs := append([]*handling.AdmissionHandler{handler(t, handlers.Mutating, "mut", nil2, nil)}, shardLabelling(t, nil))
	got := BuildWebhooks(hs, handlers.Mutating, []resources.Resource{kex}, "auto.kopf.dev", ClientConfig{URL: "https://127.0.0.1:9443/"}, false)
	if len(got) != 2 {
		t.Fatalf("webhooks = %v", got)
	}
	hook := got[1].(map[string]any)
	rules, _ := json.Marshal(hook["rules"])
	if hook["name"] != "shard.kopfgo.dev.kopfexamples.kopf.dev.auto.kopf.dev" || hook["failurePolicy"] != "Ignore" || hook["sideEffects"] != "None" ||
		string(rules) != `[{"apiGroups":["kopf.dev"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["kopfexamples"],"scope":"*"}]` ||
		hook["clientConfig"].(map[string]any)["url"] != "https://127.0.0.1:9443/shard.kopfgo.dev%2Fkopfexamples.kopf.dev" {
		t.Errorf("webhook = %v, rules %s", hook, rules)
	}
}

// A review addressed to the labelling's own webhook is answered directly
// (shardRule.answer), and the answer is the general path's, which serves
// a request naming no handler: the same status, the same patch to the
// byte, the same line, for every case of the rule, for malformed reviews
// and for a resource the handler does not serve.
func TestShardLabellingDirectAnswerIsTheGeneralOne(t *testing.T) {
	h := shardLabelling(t, func(ns string) bool { return ns == "default" })
	bodies := map[string][]byte{
		"not json":     []byte(`{"request": `),
		"no request":   []byte(`{"kind": "AdmissionReview"}`),
		"no user":      []byte(`{"request": {"uid": "1", "operation": "CREATE", "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"}, "object": {"metadata": {"name": "a"}}}}`),
		"no object":    []byte(`{"request": {"uid": "1", "operation": "CREATE", "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"}, "userInfo": {}}}`),
		"unknown":      []byte(`{"request": {"uid": "1", "operation": "CREATE", "resource": {"group": "", "version": "v1", "resource": "pods"}, "userInfo": {}, "object": {"metadata": {"name": "a"}}}}`),
		"subresource":  []byte(`{"request": {"uid": "1", "operation": "CREATE", "subResource": "status", "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"}, "userInfo": {}, "object": {"metadata": {"name": "a", "namespace": "default"}}}}`),
		"v1beta1":      []byte(`{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "2", "operation": "CREATE", "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"}, "userInfo": {}, "object": {"metadata": {"name": "a", "namespace": "default"}}}}`),
		"old only":     []byte(`{"request": {"uid": "3", "operation": "CREATE", "resource": {"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"}, "userInfo": {}, "oldObject": {"metadata": {"name": "a", "namespace": "default"}}}}`),
		"a big review": shardLabelReview("kex-7"),
	}
	for _, meta := range []map[string]any{
		{"name": "kex1", "namespace": "default", "labels": map[string]any{"app": "x"}},
		{"name": "kex1", "namespace": "default"},
		{"name": "kex1", "namespace": "default", "labels": map[string]any{testShardLabel: "9"}},
		{"name": "kex1", "namespace": "default", "labels": map[string]any{}},
		{"generateName": "kex-", "namespace": "default"},
		{"name": "kex1", "namespace": "elsewhere"},
	} {
		for _, op := range []string{"CREATE", "UPDATE", "DELETE"} {
			bodies[fmt.Sprintf("%s %v", op, meta)] = reviewJSON(op, kexWith(meta), false)
		}
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			var lines [2]bytes.Buffer
			var got [2][]byte
			var status [2]int
			var errs [2]error
			for i, webhook := range []string{h.ID, ""} {
				e := engine(h)
				e.Logger = logging.New(logging.Config{Writer: &lines[i], Level: slog.LevelDebug, Format: logging.FormatPlain})
				got[i], status[i], errs[i] = e.Answer(context.Background(), body, webhook, nil, nil)
			}
			if status[0] != status[1] || (errs[0] == nil) != (errs[1] == nil) || !bytes.Equal(got[0], got[1]) || lines[0].String() != lines[1].String() {
				t.Errorf("direct: %d %v %s %q\ngeneral: %d %v %s %q", status[0], errs[0], got[0], lines[0].String(), status[1], errs[1], got[1], lines[1].String())
			}
		})
	}
}

// The labelling's success line is at DEBUG (it would be one INFO line per
// object created), on both paths; a user's handler keeps Kopf's INFO line.
func TestShardLabellingSucceedsAtDebug(t *testing.T) {
	h := shardLabelling(t, nil)
	user := handler(t, handlers.Mutating, "mutate", nil2, nil)
	body := reviewJSON("CREATE", kexWith(map[string]any{"name": "kex1", "namespace": "default"}), false)
	for _, webhook := range []string{h.ID, ""} {
		var out bytes.Buffer
		e := engine(user, h)
		e.Logger = logging.New(logging.Config{Writer: &out, Format: logging.FormatPlain})
		ask(t, e, webhook, body)
		if strings.Contains(out.String(), h.ID) || (webhook == "") != strings.Contains(out.String(), "Handler 'mutate' succeeded.") {
			t.Errorf("webhook %q, at INFO: %q", webhook, out.String())
		}
	}
}
