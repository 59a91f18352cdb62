//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/internal/conventions"
)

// TestShardLabelAtCreation: a sharded operator that manages its webhook
// configurations labels the new objects of its resource with their shards
// at creation, through its built-in mutating webhook: the object that
// Create returns carries the label of its key's shard (conventions.Shard),
// beside a user's mutating handler's label, and nobody writes the label
// afterwards (the only field manager of the label is the creation's; the
// coordinator logs no labelling of the object); each object is handled
// once. An object created with generateName has no name at admission: it
// comes without the label, and the coordinator labels it with the same
// rule (compat: replicas-sharding).
func TestShardLabelAtCreation(t *testing.T) {
	const shards = 4
	gvr, resource := admissionCRD(t)
	ns := namespace(t)
	name := fmt.Sprintf("lbl%d", time.Now().UnixNano()%1e6)
	label := conventions.ShardLabel(name)
	managed := managedConfigs(t, "s")
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePortOn(t, "127.0.0.1"))
	opts := kopfgo.Options{MetricsAddr: metricsAddr}
	opts.Settings.Admission = kopfgo.AdmissionSettings{Server: &kopfgo.WebhookServer{Addr: "127.0.0.1"}, Managed: managed}
	opts.Sharding = kopfgo.Sharding{Shards: shards, Name: name, Namespace: ns, RetryPeriod: time.Second}
	var mu sync.Mutex
	handled := map[string]int{}
	log, stop := operatorWith(t, ns, opts, func(op *kopfgo.Operator) {
		op.On.Create(resource, func(ctx context.Context, c *kopfgo.Change) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			handled[c.Name]++
			return nil, nil
		}, kopfgo.ID("create"))
		op.On.Mutate(resource, func(ctx context.Context, a *kopfgo.Admission) error {
			a.Patch.Labels()["mutated"] = "yes"
			return nil
		}, kopfgo.ID("mutate"), kopfgo.Operations("CREATE"))
	})
	handledOnce := func(objs ...string) {
		t.Helper()
		eventually(t, waitLong, "every object handled", func() (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, o := range objs {
				if handled[o] == 0 {
					return false, fmt.Errorf("%s not handled yet", o)
				}
			}
			return true, nil
		})
	}

	// The user's webhook and the labelling's, in this order.
	eventually(t, waitLong, "the managed mutating webhooks", func() (bool, error) {
		hooks := webhooksOf(t, mutatingGVR, managed)
		return len(hooks) == 2, fmt.Errorf("webhooks %q", hookNames(hooks))
	})
	hooks := webhooksOf(t, mutatingGVR, managed)
	if got, want := hookNames(hooks), "mutate."+managed+",shard.kopfgo.dev."+resource+"."+managed; got != want {
		t.Errorf("mutating webhooks = %s, want %s", got, want)
	}
	if hooks[1]["failurePolicy"] != "Ignore" {
		t.Errorf("the labelling's failurePolicy = %v, want Ignore", hooks[1]["failurePolicy"])
	}

	gates := dyn(t).Resource(gvr).Namespace(ns)
	create := func(obj *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		u, err := gates.Create(context.Background(), obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	// The API server needs a moment to call new webhooks: the user's label
	// on a created object is the sign. Probes created before it are
	// labelled by the coordinator.
	probes := []string{}
	eventually(t, waitShort, "the webhooks to be called", func() (bool, error) {
		u := create(gateObj(gvr, fmt.Sprintf("probe-%d", len(probes)), map[string]any{"field": 1}, nil))
		probes = append(probes, u.GetName())
		return u.GetLabels()["mutated"] == "yes", nil
	})

	// owners are the field managers of an object's shard label.
	owners := func(u *unstructured.Unstructured) []string {
		var out []string
		for _, mf := range u.GetManagedFields() {
			if mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), `"f:`+label+`"`) {
				out = append(out, mf.Manager+"/"+string(mf.Operation))
			}
		}
		return out
	}
	var names []string
	creators := map[string][]string{}
	for i := range 12 {
		obj := fmt.Sprintf("kex-%02d", i)
		names = append(names, obj)
		u := create(gateObj(gvr, obj, map[string]any{"field": i}, nil))
		want := strconv.Itoa(conventions.Shard(ns, obj, shards))
		if got := u.GetLabels(); got[label] != want || got["mutated"] != "yes" {
			t.Errorf("%s was created with labels %v, want %s=%s (its key's shard) and mutated=yes", obj, got, label, want)
		}
		creators[obj] = owners(u)
	}
	// The operator's metrics count the reviews it answered, by webhook:
	// the labelling's, and the user's handler's, each at least once per
	// object created since they are called (the probes may add some).
	code, body := scrape(t, "http://"+metricsAddr+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d", code)
	}
	for _, webhook := range []string{"shard.kopfgo.dev/" + resource, "mutate"} {
		series := regexp.MustCompile(`(?m)^kopfgo_admission_requests_total\{code="200",webhook="` + regexp.QuoteMeta(webhook) + `"\} (\d+)$`)
		m := series.FindStringSubmatch(body)
		if m == nil {
			var ours []string
			for _, line := range strings.Split(body, "\n") {
				if strings.HasPrefix(line, "kopfgo_admission_requests_total") {
					ours = append(ours, line)
				}
			}
			t.Errorf("no kopfgo_admission_requests_total of the webhook %q with code 200 among:\n%s", webhook, strings.Join(ours, "\n"))
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n < len(names) {
			t.Errorf("kopfgo_admission_requests_total{webhook=%q} = %d, want at least the %d objects created", webhook, n, len(names))
		}
	}

	// generateName: no name at admission, so no label; the coordinator
	// labels the object afterwards, by its name.
	gen := gateObj(gvr, "", map[string]any{"field": "gen"}, nil)
	gen.SetGenerateName("gen-")
	generated := create(gen)
	if v, ok := generated.GetLabels()[label]; ok {
		t.Errorf("%s, made with generateName, was labelled %s at creation: its name was unknown at admission", generated.GetName(), v)
	}
	handledOnce(append(append([]string{generated.GetName()}, names...), probes...)...)
	eventually(t, waitShort, "the generated object labelled by the coordinator", func() (bool, error) {
		u, err := gates.Get(context.Background(), generated.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want := strconv.Itoa(conventions.Shard(ns, u.GetName(), shards))
		return u.GetLabels()[label] == want, fmt.Errorf("labels %v, want %s=%s", u.GetLabels(), label, want)
	})
	res := gvr.Resource + ".v1." + gvr.Group // as the log names it
	log.WaitFor(t, "Labelled "+res+" "+ns+"/"+generated.GetName()+" with shard", 1)
	// The coordinator's patch shows in the managed fields: its manager
	// owns the label it wrote (the check below would see one).
	if u, err := gates.Get(context.Background(), generated.GetName(), metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if got := owners(u); len(got) == 0 {
		t.Errorf("%s: no field manager owns the label the coordinator wrote", generated.GetName())
	}

	// Nobody wrote the label of the objects labelled at creation after
	// their creation: its owners (none: the API server attributes a
	// webhook's mutation to no manager) are still those of the creation,
	// and the coordinator logged no labelling of them.
	for _, obj := range names {
		u, err := gates.Get(context.Background(), obj, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := owners(u); !slices.Equal(got, creators[obj]) {
			t.Errorf("%s: the label %s is owned by %v, want by its creation alone (%v)", obj, label, got, creators[obj])
		}
		if n := log.Count("Labelled " + res + " " + ns + "/" + obj + " "); n != 0 {
			t.Errorf("%s: the coordinator labelled it %d times", obj, n)
		}
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	for _, obj := range append(append([]string{generated.GetName()}, names...), probes...) {
		if handled[obj] != 1 {
			t.Errorf("%s was handled %d times, want once", obj, handled[obj])
		}
	}
}
