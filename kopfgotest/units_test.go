package kopfgotest_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/kopfgotest"
)

func body(field string) map[string]any {
	return map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kex", "namespace": "ns", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"field": field},
	}
}

type kex struct {
	Spec struct {
		Field string `json:"field"`
	} `json:"spec"`
}

func createFn(ctx context.Context, c *kopfgo.TypedChange[*kex]) (any, error) {
	c.Patch.Status()["seen"] = c.Obj.Spec.Field
	c.Patch.Labels()["handled"] = "yes"
	return map[string]any{"field": c.Obj.Spec.Field, "ns": c.Namespace}, nil
}

func TestNewChangeCallsAHandlerWithoutACluster(t *testing.T) {
	c := kopfgotest.NewChange(body("x"))
	if c.Name != "kex" || c.Labels["a"] != "b" || c.Reason != kopfgo.ReasonCreate || len(c.Diff) == 0 {
		t.Fatalf("the argument: %+v", c)
	}
	res, err := kopfgo.Typed(createFn)(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if m := res.(map[string]any); m["field"] != "x" || m["ns"] != "ns" {
		t.Errorf("result %v", res)
	}
	p := c.Patch.Map()
	if p["status"].(map[string]any)["seen"] != "x" || p["metadata"].(map[string]any)["labels"].(map[string]any)["handled"] != "yes" {
		t.Errorf("patch %v", p)
	}
}

func TestNewSpawnStopsASleepingDaemon(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	s, ctl := kopfgotest.NewSpawn(body("x"), clk)
	done := make(chan int)
	go func() {
		n := 0
		for s.Sleep(context.Background(), time.Minute) {
			n++
			s.Patch.Status()["n"] = n
			if err := s.ApplyPatch(context.Background()); err != nil {
				t.Error(err)
			}
		}
		done <- n
	}()
	for !clk.HasWaiters() {
		runtime.Gosched() // the fake clock tells when the daemon sleeps only this way
	}
	clk.Step(time.Minute)
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	ctl.Stop()
	if n := <-done; n != 1 {
		t.Fatalf("%d wake-ups before the stop, want 1", n)
	}
	if got := ctl.Applied()["status"].(map[string]any)["n"]; got != 1 {
		t.Errorf("applied %v", ctl.Applied())
	}
	if !s.Stopped() {
		t.Error("not stopped")
	}
}
