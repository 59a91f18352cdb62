//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/internal/logging"
)

// (compat: log-levels-outage, flow-control) A 75-second outage of the API
// server while 100 objects are being handled is told in a few lines (the
// flow control's "unavailable" and "back"), not in one line per request
// and object; afterwards every object is handled, once.
func TestOutageIsToldInAFewLines(t *testing.T) {
	c, _, kex := clusterOfOwn(t)
	ctx := context.Background()
	var creates countingCreate
	slow := func(ctx context.Context, ch *kopfgo.Change) (any, error) {
		time.Sleep(200 * time.Millisecond) // still being handled when the API server goes
		return creates.fn(ctx, ch)
	}
	log := embeddedIn(t, logging.FormatFull, kopfgo.Options{Namespaces: []string{"default"}, Standalone: true, RESTConfig: c.RESTConfig()},
		func(op *kopfgo.Operator) { op.On.Create("kopfexamples", slow, kopfgo.ID("create")) })
	log.WaitFor(t, "Serving", 1)

	const n = 100
	for i := range n {
		if _, err := kex.Create(ctx, &unstructured.Unstructured{Object: kexNamed(t, fmt.Sprintf("kex-%d", i))}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := len(strings.Split(log.String(), "\n")) - 1
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(75 * time.Second) // the outage
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("kex-%d", i)
		eventually(t, 3*time.Minute, name+" handled", func() (bool, error) {
			u, err := kex.Get(ctx, name, metav1.GetOptions{})
			return err == nil && handled(u), err
		})
	}

	// The lines of the outage and the recovery at INFO and above, but for
	// the two lines of each object's handling, which come without an
	// outage too.
	var loud []string
	for _, line := range strings.Split(log.String(), "\n")[before:] {
		if !strings.Contains(line, "[INFO    ]") && !strings.Contains(line, "[WARNING ]") &&
			!strings.Contains(line, "[ERROR   ]") && !strings.Contains(line, "[CRITICAL]") {
			continue
		}
		if strings.Contains(line, "Handler 'create' succeeded.") || strings.Contains(line, "Creation is processed:") {
			continue
		}
		loud = append(loud, line)
	}
	if len(loud) > 5 {
		t.Errorf("%d lines at INFO and above during the outage and recovery, want at most 5:\n%s", len(loud), strings.Join(loud, "\n"))
	}
	if n := log.Count("is back after"); n != 1 {
		var told []string // the flow control's lines, for the failure's reader
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, "The API server at") {
				told = append(told, line)
			}
		}
		t.Errorf("the operator told %d times that the API server is back, want once; its flow control's lines:\n%s", n, strings.Join(told, "\n"))
	}
	for i := range n {
		name := fmt.Sprintf("kex-%d", i)
		if got := creates.get(name); got != 1 {
			t.Errorf("%s was created-handled %d times, want 1", name, got)
		}
	}
}
