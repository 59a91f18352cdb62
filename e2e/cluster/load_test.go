package cluster

import (
	"maps"
	"testing"
)

func TestRequestCountsArithmetic(t *testing.T) {
	patch := func(sub, code string) RequestKey {
		return RequestKey{Verb: "PATCH", Resource: "kopfexamples", Subresource: sub, Code: code}
	}
	before := RequestCounts{patch("", "200"): 5, patch("status", "200"): 5, {Verb: "LIST", Resource: "pods", Code: "200"}: 1}
	after := RequestCounts{
		patch("", "200"): 15, patch("status", "200"): 12, patch("", "429"): 4, patch("status", "504"): 2,
		{Verb: "LIST", Resource: "pods", Code: "200"}: 1, {Verb: "POST", Resource: "events", Code: "500"}: 3,
	}
	d := after.Sub(before)
	if _, ok := d[RequestKey{Verb: "LIST", Resource: "pods", Code: "200"}]; ok {
		t.Errorf("an unchanged series is in the difference: %v", d)
	}
	kex := d.Of("kopfexamples")
	if got := kex.Succeeded("PATCH"); got != 17 {
		t.Errorf("succeeded patches = %d, want 17", got)
	}
	if got, want := kex.Failed(), map[string]int64{"429": 4, "504": 2}; !maps.Equal(got, want) {
		t.Errorf("failed = %v, want %v", got, want)
	}
	if got := kex.ServerErrors(); got != 2 {
		t.Errorf("5xx of kopfexamples = %d, want 2", got)
	}
	if got := d.ServerErrors(); got != 5 {
		t.Errorf("5xx of all = %d, want 5", got)
	}
}
