package persistence

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/unjson"
	"github.com/kopfgo/kopfgo/patch"
)

// Progress records come back from the API server as whatever anyone wrote
// into the annotations or the status: the fuzz targets below feed the
// storages arbitrary values and require that reading never panics, that a
// value that is not a record is reported as a CorruptError naming where it
// is, and that a record read back is stored and read again unchanged.

func FuzzAnnotationsFetch(f *testing.F) {
	for _, tc := range recordFixtures {
		f.Add(tc.json)
		f.Add(tc.verbose)
	}
	for _, s := range []string{
		``, `null`, `{}`, `{"retries":`, `{"retries":"1"}`, `{"retries":-1}`, `{"retries":99999999999999999999}`,
		`{"started":"9999-12-31T23:59:59.999999+00:00"}`, `{"started":"yesterday"}`, `{"delayed":1700000000}`,
		`{"success":"true"}`, `{"subrefs":"a"}`, `{"unknown":{"nested":[1,2]}}`, `[]`, `"str"`, `{"message":null}`,
		"{\"message\":\"\xff\"}", `{"started":"2026-01-02T03:04:05+25:00"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		s := NewAnnotationsStorage()
		keys := s.keys().Make("fuzzed-handler")
		body := map[string]any{"metadata": map[string]any{"name": "x", "annotations": map[string]any{keys[0]: value}}}
		r, err := s.Fetch("fuzzed-handler", body)
		checkFetched(t, s, body, "fuzzed-handler", r, err, keys[0])
	})
}

func FuzzStatusFetch(f *testing.F) {
	for _, tc := range recordFixtures {
		f.Add([]byte(tc.json))
	}
	for _, s := range []string{
		`null`, `1`, `"x"`, `[]`, `{}`, `{"retries":1.5}`, `{"retries":-3,"success":true}`, `{"started":[]}`,
		`{"subrefs":[null]}`, `{"purpose":7}`, `{"started":"2026-01-02T03:04:05.123456"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := unjson.Unmarshal(data)
		if err != nil {
			return // the API server sends JSON only
		}
		s := &StatusStorage{}
		body := map[string]any{"status": map[string]any{"kopf": map[string]any{"progress": map[string]any{"h": v}}}}
		r, err := s.Fetch("h", body)
		checkFetched(t, s, body, "h", r, err, "status.kopf.progress.h")
	})
}

// checkFetched is the contract of every storage's Fetch on any input.
func checkFetched(t *testing.T, s Storage, body map[string]any, id string, r *Record, err error, where string) {
	t.Helper()
	if err != nil {
		var corrupt *CorruptError
		if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), where) {
			t.Fatalf("error %v does not name %s as corrupt", err, where)
		}
		if r != nil {
			t.Fatalf("both a record %+v and an error %v", r, err)
		}
		return
	}
	if r == nil {
		return
	}
	var p patch.Patch
	s.Store(id, r, body, &p)
	again, err := s.Fetch(id, p.Apply(body))
	if err != nil || again == nil {
		t.Fatalf("stored %+v, read back %+v, %v", r, again, err)
	}
	if !reflect.DeepEqual(normalized(*r), normalized(*again)) {
		t.Fatalf("stored %+v, read back %+v", *r, *again)
	}
}

// normalized drops what a round trip legitimately changes: the order of
// subrefs (stored sorted) and the sub-microsecond part of times (stored
// with microseconds, as Python does).
func normalized(r Record) Record {
	r.Subrefs = sortedSubrefs(r.Subrefs)
	for _, tp := range []**time.Time{&r.Started, &r.Stopped, &r.Delayed} {
		if *tp != nil {
			tt := (*tp).Truncate(time.Microsecond).UTC()
			*tp = &tt
		}
	}
	return r
}
