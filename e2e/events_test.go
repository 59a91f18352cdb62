//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/hierarchies"
	"github.com/kopfgo/kopfgo/internal/logging"
)

// operatorWith runs an embedded operator with opts in ns (RESTConfig and
// Logger default to the test's) until stop is called or the test ends.
// Stopping waits for Run to return: every event queued by then is posted.
func operatorWith(t *testing.T, ns string, opts kopfgo.Options, register func(op *kopfgo.Operator)) (*logSink, func()) {
	t.Helper()
	sink := &logSink{}
	opts.Namespaces = []string{ns}
	if opts.RESTConfig == nil {
		opts.RESTConfig = cluster.Shared(t).RESTConfig()
	}
	opts.Logger = logging.New(logging.Config{Format: logging.FormatPlain, Level: slog.LevelDebug, Writer: sink})
	op := kopfgo.New(opts)
	register(op)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- op.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(waitShort):
				t.Errorf("Run did not return within %s after its context ended", waitShort)
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("operator log:\n%s", sink)
		}
	})
	return sink, stop
}

// eventsAbout lists the core v1 Events about the object with this uid.
func eventsAbout(t *testing.T, ns, uid string) []corev1.Event {
	t.Helper()
	list, err := kube(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + uid})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Reason < list.Items[j].Reason })
	return list.Items
}

// waitEvents waits until at least n events about uid exist, and returns them.
func waitEvents(t *testing.T, ns, uid string, n int) []corev1.Event {
	t.Helper()
	var evs []corev1.Event
	eventually(t, waitShort, fmt.Sprintf("%d events about %s", n, uid), func() (bool, error) {
		evs = eventsAbout(t, ns, uid)
		return len(evs) >= n, nil
	})
	return evs
}

func summary(evs []corev1.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type+"/"+e.Reason+"/"+e.Message)
	}
	sort.Strings(out)
	return out
}

// (compat: events-post, events-shortcuts, events-targets, events-shape): events
// about the handled object, a typed child (compat: events-targets) and a
// cluster-scoped object, in Kopf's shape, with long messages cut; no events
// from log messages by default (compat: events-loggers).
func TestEventsArePostedAboutObjects(t *testing.T) {
	ns := namespace(t)
	long := strings.Repeat("0123456789", 500)
	var podUID, nsUID string
	var mu sync.Mutex
	log, stop := operatorWith(t, ns, kopfgo.Options{}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			c.Logger.Info("a log message, not posted by default")
			for _, err := range []error{
				kopfgo.Event(ctx, c, "SomeType", "SomeReason", "Some message"),
				kopfgo.Info(ctx, c, "InfoReason", "Some message"),
				kopfgo.Warn(ctx, c, "WarnReason", "Some message"),
				kopfgo.Exception(ctx, c, "ErrorReason", "Some exception:", errors.New("Exception text.")),
				kopfgo.Info(ctx, c, "LongReason", long),
			} {
				if err != nil {
					return nil, kopfgo.Permanent(err)
				}
			}
			api, err := kubernetes.NewForConfig(kopfgo.RESTConfig(ctx))
			if err != nil {
				return nil, kopfgo.Permanent(err)
			}
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
			if err := hierarchies.Adopt(pod, c); err != nil {
				return nil, kopfgo.Permanent(err)
			}
			created, err := api.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				return nil, err
			}
			if err := kopfgo.Info(ctx, created, "ChildReason", "about the child"); err != nil {
				return nil, kopfgo.Permanent(err)
			}
			nsObj, err := api.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			if err := kopfgo.Warn(ctx, nsObj, "NamespaceReason", "about a cluster-scoped object"); err != nil {
				return nil, kopfgo.Permanent(err)
			}
			mu.Lock()
			podUID, nsUID = string(created.UID), string(nsObj.UID)
			mu.Unlock()
			return nil, nil
		}, kopfgo.ID("create"))
	})
	obj := createKex(t, ns, objYAML(t))
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)

	evs := waitEvents(t, ns, string(obj.GetUID()), 5)
	want := []string{
		"Error/ErrorReason/Some exception: Exception text.",
		"Normal/InfoReason/Some message",
		"SomeType/SomeReason/Some message",
		"Warning/WarnReason/Some message",
	}
	var short []string
	for _, e := range evs {
		if e.Reason == "LongReason" {
			if len(e.Message) > 1024 || !strings.Contains(e.Message, "...") || !strings.HasPrefix(e.Message, long[:500]) || !strings.HasSuffix(e.Message, long[len(long)-500:]) {
				t.Errorf("long message: %d bytes, want at most 1024 with its head and tail around ...", len(e.Message))
			}
			continue
		}
		short = append(short, e.Type+"/"+e.Reason+"/"+e.Message)
	}
	sort.Strings(short)
	if fmt.Sprint(short) != fmt.Sprint(want) {
		t.Errorf("events:\n got %q\nwant %q", short, want)
	}
	prefix := regexp.MustCompile(`^kopf-event-[a-z0-9]+$`)
	for _, e := range evs {
		inv := e.InvolvedObject
		if inv.APIVersion != "kopf.dev/v1" || inv.Kind != "KopfExample" || inv.Name != obj.GetName() || inv.Namespace != ns {
			t.Errorf("event %s: involvedObject %+v", e.Reason, inv)
		}
		if e.Source.Component != "kopf" || e.ReportingController != "kopf" || e.ReportingInstance != "dev" || e.Action != "Action?" ||
			!prefix.MatchString(e.Name) || e.EventTime.IsZero() || e.FirstTimestamp.IsZero() || e.LastTimestamp.IsZero() {
			t.Errorf("event %s is not in Kopf's shape: name %s, source %q, reporting %q/%q, action %q, times %v %v %v",
				e.Reason, e.Name, e.Source.Component, e.ReportingController, e.ReportingInstance, e.Action, e.EventTime, e.FirstTimestamp, e.LastTimestamp)
		}
	}

	mu.Lock()
	pu, nu := podUID, nsUID
	mu.Unlock()
	child := waitEvents(t, ns, pu, 1)
	if inv := child[0].InvolvedObject; inv.Kind != "Pod" || inv.APIVersion != "v1" || child[0].Message != "about the child" {
		t.Errorf("event about the child: %+v %q", inv, child[0].Message)
	}
	cl := waitEvents(t, "default", nu, 1)
	if inv := cl[0].InvolvedObject; inv.Kind != "Namespace" || inv.Name != ns || cl[0].Type != "Warning" {
		t.Errorf("event about the namespace: %+v %s", inv, cl[0].Type)
	}

	stop()
	for _, e := range eventsAbout(t, ns, string(obj.GetUID())) {
		if e.Reason == "Logging" {
			t.Errorf("a log message was posted by default: %q", e.Message)
		}
	}
}

// (compat: events-gates): posting disabled posts nothing, explicit calls
// included; with the level at WARNING, Info is dropped and Warn posted.
func TestEventPostingSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		disabled bool
		level    slog.Level
		want     []string
	}{
		{"disabled", true, slog.LevelDebug, nil},
		{"warning level", false, slog.LevelWarn, []string{"Error/E/m x", "T/Any/m", "Warning/W/m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			var s kopfgo.Settings
			s.Posting.Disabled, s.Posting.Level = tc.disabled, tc.level
			log, stop := operatorWith(t, ns, kopfgo.Options{Settings: s}, func(op *kopfgo.Operator) {
				op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
					return nil, errors.Join(
						kopfgo.Event(ctx, c, "T", "Any", "m"),
						kopfgo.Info(ctx, c, "I", "m"),
						kopfgo.Warn(ctx, c, "W", "m"),
						kopfgo.Exception(ctx, c, "E", "m", errors.New("x")),
					)
				}, kopfgo.ID("create"))
			})
			obj := createKex(t, ns, objYAML(t))
			log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
			stop() // every event queued is posted by the time Run returns
			if got := summary(eventsAbout(t, ns, string(obj.GetUID()))); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
}

// restricted returns the credentials of a new service account in ns that
// may do only what rules allow there (and discover the API, as every
// authenticated user may).
func restricted(t *testing.T, ns string, rules []rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	ctx := context.Background()
	k := kube(t)
	const name = "restricted-operator"
	meta := metav1.ObjectMeta{Name: name, Namespace: ns}
	if _, err := k.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: meta,
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expiry := int64(3600)
	tok, err := k.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(cluster.Shared(t).RESTConfig())
	cfg.BearerToken = tok.Status.Token
	return cfg
}

// (compat: events-background): an operator not allowed to create events still
// handles objects; the failed posts are warnings.
func TestFailedEventPostsDoNotFailHandlers(t *testing.T) {
	ns := namespace(t)
	cfg := restricted(t, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{"kopf.dev"}, Resources: []string{"kopfexamples"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"kopf.dev"}, Resources: []string{"kopfexamples/status"}, Verbs: []string{"patch"}},
	})
	log, _ := operatorWith(t, ns, kopfgo.Options{RESTConfig: cfg}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			return map[string]any{"posted": true}, kopfgo.Info(ctx, c, "SomeReason", "Some message")
		}, kopfgo.ID("create"))
	})
	obj := createKex(t, ns, objYAML(t))
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	got := waitKex(t, ns, obj.GetName(), "handled", handled)
	if v, _, _ := unstructuredBool(got.Object, "status", "create", "posted"); !v {
		t.Errorf("status.create = %v, want the handler's result", got.Object["status"])
	}
	log.WaitFor(t, "Failed to post an event. Ignoring and continuing.", 1)
	if log.Count("forbidden") == 0 {
		t.Errorf("the warning does not say the post was forbidden")
	}
}

func unstructuredBool(obj map[string]any, path ...string) (bool, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return false, false, nil
		}
		cur = m[p]
	}
	b, ok := cur.(bool)
	return b, ok, nil
}

// (compat: events-loggers, events-not-about-events): with
// settings.posting.loggers, the object loggers' messages become events with
// reason Logging; an operator that also handles v1 events (and logs about them)
// never posts events about events.
func TestLogMessagesArePostedAsEventsButNotAboutEvents(t *testing.T) {
	ns := namespace(t)
	var s kopfgo.Settings
	s.Posting.Loggers = true
	log, stop := operatorWith(t, ns, kopfgo.Options{Settings: s}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			c.Logger.Info("hello from the handler")
			c.Logger.Debug("debug is below the posting level")
			return nil, nil
		}, kopfgo.ID("create"))
		op.On.Create("v1/events", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			c.Logger.Warn("an event is seen")
			return nil, kopfgo.Info(ctx, c, "AboutAnEvent", "never posted")
		}, kopfgo.ID("events"))
	})
	obj := createKex(t, ns, objYAML(t))
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	evs := waitEvents(t, ns, string(obj.GetUID()), 3)
	// The operator handles its own events too; let it see them all.
	eventually(t, waitShort, "every event handled", func() (bool, error) {
		list, err := kube(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if _, ok := e.Annotations["kopf.zalando.org/last-handled-configuration"]; !ok {
				return false, nil
			}
		}
		return len(list.Items) >= 3, nil
	})
	stop()

	got := summary(evs)
	for _, want := range []string{"Normal/Logging/hello from the handler", "Normal/Logging/Handler 'create' succeeded."} {
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("no event %q among %q", want, got)
		}
	}
	for _, g := range got {
		if strings.Contains(g, "debug is below") {
			t.Errorf("a debug message was posted at the INFO level: %q", g)
		}
	}
	list, err := kube(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Event" {
			t.Errorf("an event about an event: %s %s %q", e.Type, e.Reason, e.Message)
		}
	}
	if n := log.Count("an event is seen"); n < 3 {
		t.Errorf("the events handler ran %d times, want once per event (at least 3)", n)
	}
}
