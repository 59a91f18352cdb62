//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// (compat: watching-timeouts, watching-bookmarks, watching-new-crds, scope-namespaces, networking-retries, errors-throttling): the operator keeps working through what a
// real cluster does to it.

// countingCreate counts create calls per object name.
type countingCreate struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingCreate) fn(ctx context.Context, ch *kopfgo.Change) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[ch.Name]++
	return nil, nil
}

func (c *countingCreate) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// clusterOfOwn starts a cluster for the test alone (one it may stop and
// start), with the examples' CRD, and gives the KopfExamples of "default".
func clusterOfOwn(t *testing.T) (*cluster.Cluster, dynamic.Interface, dynamic.ResourceInterface) {
	t.Helper()
	c := cluster.NewForTest(t, cluster.Options{})
	if err := c.ApplyFile(context.Background(), filepath.Join(repoRoot, "examples", "crd.yaml")); err != nil {
		t.Fatal(err)
	}
	d, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c, d, d.Resource(kexGVR).Namespace("default")
}

func TestOperatorSurvivesAnAPIServerRestart(t *testing.T) {
	c, d, kex := clusterOfOwn(t)
	ctx := context.Background()
	var creates countingCreate
	var cu caughtUp
	log := embeddedWith(t, kopfgo.Options{Namespaces: []string{"default"}, RESTConfig: c.RESTConfig()}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
		cu.register(op)
	})
	handledIn := func(name string) {
		t.Helper()
		eventually(t, waitLong, name+" handled", func() (bool, error) {
			u, err := kex.Get(ctx, name, metav1.GetOptions{})
			return err == nil && handled(u), err
		})
	}
	create := func(name string) {
		t.Helper()
		if _, err := kex.Create(ctx, &unstructured.Unstructured{Object: kexNamed(t, name)}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("before")
	handledIn("before")

	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second) // the outage the operator must live through
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	// Created while the operator is still reconnecting.
	create("after-1")
	create("after-2")
	handledIn("after-1")
	handledIn("after-2")
	log.WaitFor(t, "Creation is processed", 3)
	for _, name := range []string{"before", "after-1", "after-2"} {
		cu.waitIn(t, d, "default", name) // every event since the outage handled
	}
	for name, want := range map[string]int{"before": 1, "after-1": 1, "after-2": 1} {
		if got := creates.get(name); got != want {
			t.Errorf("%s was created-handled %d times, want %d", name, got, want)
		}
	}
}

// stallProxy forwards TCP connections to the API server until Stall: then
// the connections open at that moment stop carrying bytes, silently, as a
// connection dropped by a load balancer does; new connections still work.
type stallProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frozen chan struct{} // closed on Stall; connections hold the one current when they opened
	wg     sync.WaitGroup
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, frozen: make(chan struct{})}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		ln.Close()
		p.Stall() // unblocks nothing, but new accepts are over anyway
	})
	return p
}

func (p *stallProxy) Addr() string { return p.ln.Addr().String() }

func (p *stallProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.frozen:
	default:
		close(p.frozen)
	}
	p.frozen = make(chan struct{})
}

func (p *stallProxy) serve() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		frozen := p.frozen
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			conn.Close()
			continue
		}
		go pipe(conn, up, frozen)
		go pipe(up, conn, frozen)
	}
}

// pipe copies until frozen, then holds the connection open, silent; the
// other side sees nothing at all, not even a close, until the test ends.
func pipe(dst, src net.Conn, frozen chan struct{}) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		select {
		case <-frozen:
			return // silently drop what came and never forward again
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			return
		}
	}
}

func TestSilentWatchIsRestartedAfterTheInactivityTimeout(t *testing.T) {
	ns := namespace(t)
	shared := cluster.Shared(t)
	target := shared.APIServerURL[len("https://"):]
	proxy := newStallProxy(t, target)
	cfg := shared.RESTConfig()
	cfg.Host = "https://" + proxy.Addr()
	// HTTP/2 connections (the operator's patches) that go silent are found by
	// client-go's pings; shorten them so the test is not about them.
	t.Setenv("HTTP2_READ_IDLE_TIMEOUT_SECONDS", "2")
	t.Setenv("HTTP2_PING_TIMEOUT_SECONDS", "2")
	var settings kopfgo.Settings
	settings.Watching.InactivityTimeout = 3 * time.Second
	var creates countingCreate
	log := embeddedWith(t, kopfgo.Options{Namespaces: []string{ns}, RESTConfig: cfg, Settings: settings}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
	})
	createKex(t, ns, kexNamed(t, "first"))
	waitKex(t, ns, "first", "handled", handled)

	proxy.Stall()
	createKex(t, ns, kexNamed(t, "during-stall"))
	waitKex(t, ns, "during-stall", "handled despite the silent stream", handled)
	log.WaitFor(t, "is inactive, reconnecting.", 1)
	if n := creates.get("during-stall"); n != 1 {
		t.Errorf("handled %d times, want 1", n)
	}
}

func TestNewCRDIsServedWithoutARestart(t *testing.T) {
	ns := namespace(t)
	group := fmt.Sprintf("late%d.e2e.kopfgo.dev", time.Now().UnixNano()%1e9)
	var creates countingCreate
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("latewidgets."+group, creates.fn, kopfgo.ID("create"))
	})
	log.WaitFor(t, "Unresolved resources cannot be served", 1)
	crd := crdYAML(group, "LateWidget", "latewidgets")
	if err := cluster.Shared(t).Apply(context.Background(), []byte(crd)); err != nil {
		t.Fatal(err)
	}
	log.WaitFor(t, "Serving latewidgets.v1."+group, 1)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "latewidgets"}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "LateWidget",
		"metadata": map[string]any{"name": "w1", "namespace": ns}, "spec": map[string]any{"x": 1},
	}}
	if _, err := dyn(t).Resource(gvr).Namespace(ns).Create(context.Background(), w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	if n := creates.get("w1"); n != 1 {
		t.Errorf("handled %d times, want 1", n)
	}
}

func TestNamespacePatternServesNewNamespaces(t *testing.T) {
	prefix := fmt.Sprintf("team%d", time.Now().UnixNano()%1e9)
	var creates countingCreate
	var cu caughtUp
	log := embeddedWith(t, kopfgo.Options{Namespaces: []string{prefix + "-*,!" + prefix + "-skip"}}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
		cu.register(op)
	})
	log.WaitFor(t, "Serving", 1)
	k := kube(t)
	// The excluded namespaces' objects come first: the operator watches the
	// namespaces of a pattern with one cluster-wide stream, which delivers
	// the events in the order they happened; so once it has handled the
	// last object and two markers after it, the others' events have long
	// been dispatched (or dropped), and their handling would be over.
	for _, ns := range []string{prefix + "-skip", "other-" + prefix, prefix + "-a"} {
		if _, err := k.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createKex(t, ns, kexNamed(t, "kex-"+ns))
	}
	waitKex(t, prefix+"-a", "kex-"+prefix+"-a", "handled in a new matching namespace", handled)
	cu.wait(t, prefix+"-a", "kex-"+prefix+"-a")
	for _, ns := range []string{prefix + "-skip", "other-" + prefix} {
		if n := creates.get("kex-" + ns); n != 0 {
			t.Errorf("an object in %s was handled although the pattern excludes it", ns)
		}
		for key := range getKex(t, ns, "kex-"+ns).GetAnnotations() {
			if strings.HasPrefix(key, "kopf.zalando.org/") {
				t.Errorf("annotation %s on an object in %s, which the pattern excludes", key, ns)
			}
		}
		if n := log.Count("[" + ns + "/"); n != 0 {
			t.Errorf("%d log lines about an object in %s, which the pattern excludes", n, ns)
		}
	}
}

func TestForbiddenPatchIsReportedAndOtherResourcesServed(t *testing.T) {
	ns := namespace(t)
	cfg := restricted(t, ns, []rbacv1.PolicyRule{
		{APIGroups: []string{"kopf.dev"}, Resources: []string{"kopfexamples"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	})
	var kexes, cms countingCreate
	log := embeddedWith(t, kopfgo.Options{Namespaces: []string{ns}, RESTConfig: cfg}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", kexes.fn, kopfgo.ID("kex"))
		op.On.Create("v1/configmaps", cms.fn, kopfgo.ID("cm"))
	})
	createKex(t, ns, objYAML(t))
	// The pass's first write is its status patch (the framework's
	// conditions go first, as handlers' results do), which the role
	// forbids as it forbids every patch of the kopfexamples.
	log.WaitFor(t, `may not patch the status of kopfexamples.v1.kopf.dev in namespace `+ns, 1)
	log.WaitFor(t, `grant it the "patch" verb on "kopfexamples/status.kopf.dev"`, 1)

	cm, err := kube(t).CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, "the configmap handled", func() (bool, error) {
		got, err := kube(t).CoreV1().ConfigMaps(ns).Get(context.Background(), cm.Name, metav1.GetOptions{})
		return err == nil && got.Annotations["kopf.zalando.org/last-handled-configuration"] != "", err
	})
}
