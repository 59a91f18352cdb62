package hierarchies

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// owner is the demo object as a handler sees it.
func owner() map[string]any {
	return map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{
			"name": "kopf-example-1", "namespace": "ns1", "uid": "uid-owner",
			"labels": map[string]any{"somelabel": "somevalue", "other": "x"},
		},
	}
}

var ownerRefJSON = `{"apiVersion":"kopf.dev/v1","blockOwnerDeletion":true,"controller":true,"kind":"KopfExample","name":"kopf-example-1","uid":"uid-owner"}`

// js renders any object as JSON with sorted keys, the form compared here.
func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

func body(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func TestAppendOwnerReference(t *testing.T) {
	other := `{"apiVersion":"v1","kind":"Secret","name":"s","uid":"uid-other"}`
	for _, tc := range []struct {
		name string
		obj  func() any
		opts []Option
		want string // the resulting object as JSON
	}{
		{"body without metadata", func() any { return body(`{"kind":"Pod"}`) }, nil,
			`{"kind":"Pod","metadata":{"ownerReferences":[` + ownerRefJSON + `]}}`},
		{"already owned: no duplicate (compat: hierarchies-owner-references)", func() any {
			return body(`{"metadata":{"ownerReferences":[{"uid":"uid-owner","name":"old"}]}}`)
		}, nil, `{"metadata":{"ownerReferences":[{"name":"old","uid":"uid-owner"}]}}`},
		{"another owner is kept", func() any { return body(`{"metadata":{"ownerReferences":[` + other + `]}}`) }, nil,
			`{"metadata":{"ownerReferences":[` + other + `,` + ownerRefJSON + `]}}`},
		{"hand-built list type", func() any {
			return map[string]any{"metadata": map[string]any{"ownerReferences": []map[string]any{body(other)}}}
		}, nil, `{"metadata":{"ownerReferences":[` + other + `,` + ownerRefJSON + `]}}`},
		{"flags", func() any { return body(`{}`) }, []Option{Controller(false), BlockOwnerDeletion(false)},
			`{"metadata":{"ownerReferences":[{"apiVersion":"kopf.dev/v1","blockOwnerDeletion":false,"controller":false,"kind":"KopfExample","name":"kopf-example-1","uid":"uid-owner"}]}}`},
		{"unstructured", func() any { return &unstructured.Unstructured{} }, nil,
			`{"metadata":{"ownerReferences":[` + ownerRefJSON + `]}}`},
		{"typed", func() any { return &corev1.ConfigMap{} }, nil,
			`{"metadata":{"ownerReferences":[` + ownerRefJSON + `]}}`},
		{"slice of typed values", func() any { return []corev1.ConfigMap{{}, {}} }, nil,
			`[{"metadata":{"ownerReferences":[` + ownerRefJSON + `]}},{"metadata":{"ownerReferences":[` + ownerRefJSON + `]}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj()
			if err := AppendOwnerReference(obj, owner(), tc.opts...); err != nil {
				t.Fatal(err)
			}
			if got := js(t, obj); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestOwnerMustExist(t *testing.T) {
	for _, tc := range []struct {
		name    string
		owner   any
		missing string
	}{
		{"no uid", body(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`), "metadata.uid"},
		{"no kind", body(`{"apiVersion":"v1","metadata":{"name":"p","uid":"u"}}`), "kind"},
		{"not a kind", &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}, "TypeMeta"},
		{"nil", nil, "nil"},
		{"unsupported", "kopf-example-1", "unsupported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			child := body(`{"metadata":{"name":"child"}}`)
			before := js(t, child)
			for name, err := range map[string]error{
				"AppendOwnerReference": AppendOwnerReference(child, tc.owner),
				"Adopt":                Adopt(child, tc.owner),
			} {
				if err == nil || !strings.Contains(err.Error(), tc.missing) {
					t.Errorf("%s: %v, want an error about %s", name, err, tc.missing)
				}
			}
			if after := js(t, child); after != before {
				t.Errorf("the child changed despite the error: %s", after)
			}
		})
	}
}

func TestRemoveOwnerReference(t *testing.T) {
	refs := `[{"uid":"uid-a"},{"uid":"uid-owner","name":"one"},{"uid":"uid-owner","name":"two"}]`
	m := body(`{"metadata":{"ownerReferences":` + refs + `}}`)
	if err := RemoveOwnerReference(m, owner()); err != nil {
		t.Fatal(err)
	}
	if got, want := js(t, m), `{"metadata":{"ownerReferences":[{"uid":"uid-a"}]}}`; got != want {
		t.Errorf("body: got %s, want %s", got, want)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{UID: "uid-a"}, {UID: "uid-owner"}}}}
	if err := RemoveOwnerReference(cm, owner()); err != nil {
		t.Fatal(err)
	}
	if got := cm.OwnerReferences; len(got) != 1 || got[0].UID != "uid-a" {
		t.Errorf("typed: references %v, want only uid-a", got)
	}
	bare := body(`{"kind":"Pod"}`)
	if err := RemoveOwnerReference(bare, owner()); err != nil || js(t, bare) != `{"kind":"Pod"}` {
		t.Errorf("an object without references: %v, %s; want it unchanged", err, js(t, bare))
	}
	if err := RemoveOwnerReference(m, body(`{"metadata":{"name":"x"}}`)); err == nil {
		t.Error("an owner without uid: no error")
	}
}

func TestLabel(t *testing.T) {
	labels := map[string]string{"somelabel": "somevalue"}
	for _, tc := range []struct {
		name string
		obj  string
		opts []Option
		want string
	}{
		{"no metadata", `{}`, nil, `{"metadata":{"labels":{"somelabel":"somevalue"}}}`},
		{"existing key kept (compat: hierarchies-labels)", `{"metadata":{"labels":{"somelabel":"keep","x":"y"}}}`, nil,
			`{"metadata":{"labels":{"somelabel":"keep","x":"y"}}}`},
		{"forced", `{"metadata":{"labels":{"somelabel":"keep"}}}`, []Option{Forced()},
			`{"metadata":{"labels":{"somelabel":"somevalue"}}}`},
		{"nested (compat: hierarchies-labels)", `{"spec":{"template":{"spec":{}}}}`, []Option{Nested("spec.template")},
			`{"metadata":{"labels":{"somelabel":"somevalue"}},"spec":{"template":{"metadata":{"labels":{"somelabel":"somevalue"}},"spec":{}}}}`},
		{"nested missing: not created (compat: hierarchies-labels)", `{"spec":{}}`, []Option{Nested("spec.template")},
			`{"metadata":{"labels":{"somelabel":"somevalue"}},"spec":{}}`},
		{"nested null: not created", `{"spec":{"template":null}}`, []Option{Nested("spec.template")},
			`{"metadata":{"labels":{"somelabel":"somevalue"}},"spec":{"template":null}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := body(tc.obj)
			if err := Label(obj, labels, tc.opts...); err != nil {
				t.Fatal(err)
			}
			if got := js(t, obj); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}

	t.Run("typed nested", func(t *testing.T) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"somelabel": "keep"}}}
		if err := Label(d, labels, Nested("spec.template")); err != nil {
			t.Fatal(err)
		}
		if d.Labels["somelabel"] != "keep" || d.Spec.Template.Labels["somelabel"] != "somevalue" {
			t.Errorf("labels %v, template labels %v", d.Labels, d.Spec.Template.Labels)
		}
		cj := &batchv1.CronJob{}
		if err := Label(cj, labels, Nested("spec.jobTemplate", "spec.jobTemplate.spec.template")); err != nil {
			t.Fatal(err)
		}
		if cj.Spec.JobTemplate.Labels["somelabel"] != "somevalue" || cj.Spec.JobTemplate.Spec.Template.Labels["somelabel"] != "somevalue" {
			t.Errorf("cronjob: %s", js(t, cj))
		}
		pod := &corev1.Pod{}
		if err := Label(pod, labels, Nested("spec.nosuchfield")); err != nil {
			t.Errorf("a missing nested field: %v, want it skipped", err)
		}
		if err := Label(pod, labels, Nested("spec.containers")); err == nil {
			t.Error("a nested list: no error")
		}
	})

	t.Run("hand-built string labels", func(t *testing.T) {
		obj := map[string]any{"metadata": map[string]any{"labels": map[string]string{"a": "b"}}}
		if err := Label(obj, labels); err != nil {
			t.Fatal(err)
		}
		if got := js(t, obj); got != `{"metadata":{"labels":{"a":"b","somelabel":"somevalue"}}}` {
			t.Errorf("got %s", got)
		}
	})

	t.Run("malformed", func(t *testing.T) {
		for _, s := range []string{`{"metadata":"x"}`, `{"metadata":{"labels":[1]}}`} {
			if err := Label(body(s), labels); err == nil {
				t.Errorf("%s: no error", s)
			}
		}
		if err := Label(body(`{"spec":{"template":"x"}}`), labels, Nested("spec.template")); err == nil {
			t.Error("a nested string: no error")
		}
	})
}

func TestHarmonizeNaming(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  string
		opts []Option
		want string
	}{
		{"unnamed (compat: hierarchies-naming)", `{}`, nil, `{"metadata":{"generateName":"kopf-example-1-"}}`},
		{"unnamed strict", `{}`, []Option{Strict()}, `{"metadata":{"name":"kopf-example-1"}}`},
		{"named: kept", `{"metadata":{"name":"mine"}}`, nil, `{"metadata":{"name":"mine"}}`},
		{"generate-named: kept", `{"metadata":{"generateName":"mine-"}}`, []Option{Strict()}, `{"metadata":{"generateName":"mine-"}}`},
		{"empty name counts as named, as in Kopf", `{"metadata":{"name":""}}`, nil, `{"metadata":{"name":""}}`},
		{"forced", `{"metadata":{"name":"mine"}}`, []Option{Forced()}, `{"metadata":{"generateName":"kopf-example-1-"}}`},
		{"forced strict", `{"metadata":{"generateName":"mine-"}}`, []Option{Forced(), Strict()}, `{"metadata":{"name":"kopf-example-1"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := body(tc.obj)
			if err := HarmonizeNaming(obj, "kopf-example-1", tc.opts...); err != nil {
				t.Fatal(err)
			}
			if got := js(t, obj); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	pod := &corev1.Pod{}
	if err := HarmonizeNaming(pod, "kopf-example-1"); err != nil || pod.GenerateName != "kopf-example-1-" || pod.Name != "" {
		t.Errorf("typed: %v, %q %q", err, pod.Name, pod.GenerateName)
	}
	if err := HarmonizeNaming(pod, "other", Forced(), Strict()); err != nil || pod.GenerateName != "" || pod.Name != "other" {
		t.Errorf("typed forced strict: %v, %q %q", err, pod.Name, pod.GenerateName)
	}
	if err := HarmonizeNaming(body(`{}`), ""); err == nil {
		t.Error("an empty name: no error")
	}
}

func TestAdjustNamespace(t *testing.T) {
	for _, tc := range []struct {
		name, obj, ns string
		opts          []Option
		want          string
	}{
		{"absent (compat: hierarchies-namespace)", `{}`, "ns1", nil, `{"metadata":{"namespace":"ns1"}}`},
		{"null", `{"metadata":{"namespace":null}}`, "ns1", nil, `{"metadata":{"namespace":"ns1"}}`},
		{"present: kept", `{"metadata":{"namespace":"mine"}}`, "ns1", nil, `{"metadata":{"namespace":"mine"}}`},
		{"forced", `{"metadata":{"namespace":"mine"}}`, "ns1", []Option{Forced()}, `{"metadata":{"namespace":"ns1"}}`},
		{"cluster-scoped owner: nothing", `{}`, "", nil, `{}`},
		{"cluster-scoped owner, forced: cleared", `{"metadata":{"namespace":"mine"}}`, "", []Option{Forced()}, `{"metadata":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := body(tc.obj)
			if err := AdjustNamespace(obj, tc.ns, tc.opts...); err != nil {
				t.Fatal(err)
			}
			if got := js(t, obj); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mine"}}
	if err := AdjustNamespace(pod, "ns1"); err != nil || pod.Namespace != "mine" {
		t.Errorf("typed with a namespace: %v, %q", err, pod.Namespace)
	}
	if err := AdjustNamespace(pod, "ns1", Forced()); err != nil || pod.Namespace != "ns1" {
		t.Errorf("typed forced: %v, %q", err, pod.Namespace)
	}
}

// (compat: hierarchies-adopt): adopt with strict, forced and nested on a
// Deployment, as a body and as a typed object.
func TestAdopt(t *testing.T) {
	wantLabels := `{"other":"x","somelabel":"somevalue"}`
	opts := []Option{Strict(), Forced(), Nested("spec.template")}

	m := body(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"mine","namespace":"elsewhere","labels":{"somelabel":"old"}},"spec":{"template":{"spec":{}}}}`)
	if err := Adopt(m, owner(), opts...); err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":` + wantLabels + `,"name":"kopf-example-1","namespace":"ns1","ownerReferences":[` + ownerRefJSON + `]},"spec":{"template":{"metadata":{"labels":` + wantLabels + `},"spec":{}}}}`
	if got := js(t, m); got != want {
		t.Errorf("body:\n got %s\nwant %s", got, want)
	}

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{GenerateName: "mine-", Namespace: "elsewhere"}}
	if err := Adopt(d, owner(), opts...); err != nil {
		t.Fatal(err)
	}
	if d.Name != "kopf-example-1" || d.GenerateName != "" || d.Namespace != "ns1" ||
		js(t, d.Labels) != wantLabels || js(t, d.Spec.Template.Labels) != wantLabels ||
		len(d.OwnerReferences) != 1 || js(t, d.OwnerReferences[0]) != ownerRefJSON {
		t.Errorf("typed: %s", js(t, d.ObjectMeta))
	}

	// Without options: a prefix, existing values kept.
	pod := body(`{"metadata":{"labels":{"somelabel":"keep"}}}`)
	if err := Adopt(pod, owner()); err != nil {
		t.Fatal(err)
	}
	if got, want := js(t, pod), `{"metadata":{"generateName":"kopf-example-1-","labels":{"other":"x","somelabel":"keep"},"namespace":"ns1","ownerReferences":[`+ownerRefJSON+`]}}`; got != want {
		t.Errorf("defaults:\n got %s\nwant %s", got, want)
	}

	// A typed owner read from the API, with its TypeMeta empty.
	cm := &corev1.ConfigMap{}
	parent := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns2", UID: "uid-web"}}
	if err := Adopt(cm, parent); err != nil {
		t.Fatal(err)
	}
	if r := cm.OwnerReferences; len(r) != 1 || r[0].APIVersion != "apps/v1" || r[0].Kind != "Deployment" || cm.Namespace != "ns2" || cm.GenerateName != "web-" {
		t.Errorf("typed owner: %s", js(t, cm.ObjectMeta))
	}
}

// Adopt changes all or nothing: a malformed child among several leaves every
// child as it was.
func TestAdoptIsAllOrNothing(t *testing.T) {
	good := body(`{}`)
	bad := body(`{"metadata":{"labels":"oops"}}`)
	if err := Adopt([]any{good, bad}, owner()); err == nil {
		t.Fatal("no error for malformed labels")
	}
	if js(t, good) != `{}` {
		t.Errorf("the good child changed: %s", js(t, good))
	}
}

func TestUnsupportedObjects(t *testing.T) {
	var nilPod *corev1.Pod
	for _, obj := range []any{nil, "x", 42, nilPod, map[string]any(nil), [1]corev1.Pod{}} {
		if err := Label(obj, map[string]string{"a": "b"}); err == nil {
			t.Errorf("%T: no error", obj)
		}
	}
}

func BenchmarkAdopt(b *testing.B) {
	o := owner()
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pod := &corev1.Pod{}
			if err := Adopt(pod, o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pod := map[string]any{"apiVersion": "v1", "kind": "Pod"}
			if err := Adopt(pod, o); err != nil {
				b.Fatal(err)
			}
		}
	})
}
