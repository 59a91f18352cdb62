package persistence

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	t = t.UTC()
	return &t
}

var (
	t0 = ts("2026-01-02T03:04:05.123456Z")
	t1 = ts("2026-01-02T03:04:35.123456Z")
	t2 = ts("2026-01-02T03:05:00Z")
)

// The fixtures were produced by Kopf's own code path under CPython:
// HandlerState.for_storage() (kopf/_core/actions/progression.py) with aware
// UTC datetimes, then AnnotationsProgressStorage.store()'s filtering and
// json.dumps(..., separators=(',', ':')) (kopf/_cogs/configs/progress.py).
var recordFixtures = []struct {
	name          string
	rec           Record
	json, verbose string
}{
	{
		name:    "fresh",
		rec:     Record{Started: t0, Purpose: "create"},
		json:    `{"started":"2026-01-02T03:04:05.123456+00:00","purpose":"create","retries":0,"success":false,"failure":false}`,
		verbose: `{"started":"2026-01-02T03:04:05.123456+00:00","stopped":null,"delayed":null,"purpose":"create","retries":0,"success":false,"failure":false,"message":null,"subrefs":null}`,
	},
	{
		name:    "delayed after a temporary error",
		rec:     Record{Started: t0, Delayed: t1, Purpose: "create", Retries: 1, Message: "Not ready yet."},
		json:    `{"started":"2026-01-02T03:04:05.123456+00:00","delayed":"2026-01-02T03:04:35.123456+00:00","purpose":"create","retries":1,"success":false,"failure":false,"message":"Not ready yet."}`,
		verbose: `{"started":"2026-01-02T03:04:05.123456+00:00","stopped":null,"delayed":"2026-01-02T03:04:35.123456+00:00","purpose":"create","retries":1,"success":false,"failure":false,"message":"Not ready yet.","subrefs":null}`,
	},
	{
		name:    "success with whole seconds",
		rec:     Record{Started: t0, Stopped: t2, Purpose: "update", Retries: 2, Success: true},
		json:    `{"started":"2026-01-02T03:04:05.123456+00:00","stopped":"2026-01-02T03:05:00.000000+00:00","purpose":"update","retries":2,"success":true,"failure":false}`,
		verbose: `{"started":"2026-01-02T03:04:05.123456+00:00","stopped":"2026-01-02T03:05:00.000000+00:00","delayed":null,"purpose":"update","retries":2,"success":true,"failure":false,"message":null,"subrefs":null}`,
	},
	{
		name:    "failure with characters Go's encoder would escape",
		rec:     Record{Started: t0, Stopped: t2, Purpose: "delete", Retries: 1, Failure: true, Message: "Boom: <bad> & \"quoted\" \\ path/x\n\ttab"},
		json:    `{"started":"2026-01-02T03:04:05.123456+00:00","stopped":"2026-01-02T03:05:00.000000+00:00","purpose":"delete","retries":1,"success":false,"failure":true,"message":"Boom: <bad> & \"quoted\" \\ path/x\n\ttab"}`,
		verbose: `{"started":"2026-01-02T03:04:05.123456+00:00","stopped":"2026-01-02T03:05:00.000000+00:00","delayed":null,"purpose":"delete","retries":1,"success":false,"failure":true,"message":"Boom: <bad> & \"quoted\" \\ path/x\n\ttab","subrefs":null}`,
	},
	{
		name:    "subrefs sorted",
		rec:     Record{Started: t0, Purpose: "resume", Retries: 1, Subrefs: []string{"fn/sub2", "fn/sub1", "fn/<lambda>"}},
		json:    `{"started":"2026-01-02T03:04:05.123456+00:00","purpose":"resume","retries":1,"success":false,"failure":false,"subrefs":["fn/<lambda>","fn/sub1","fn/sub2"]}`,
		verbose: `{"started":"2026-01-02T03:04:05.123456+00:00","stopped":null,"delayed":null,"purpose":"resume","retries":1,"success":false,"failure":false,"message":null,"subrefs":["fn/<lambda>","fn/sub1","fn/sub2"]}`,
	},
	{
		name:    "non-ascii escaped as python does",
		rec:     Record{Started: t0, Purpose: "create", Retries: 1, Message: "Ошибка: naïve ✓ 😀 \x7f \x01"},
		json:    `{"started":"2026-01-02T03:04:05.123456+00:00","purpose":"create","retries":1,"success":false,"failure":false,"message":"\u041e\u0448\u0438\u0431\u043a\u0430: na\u00efve \u2713 \ud83d\ude00 \u007f \u0001"}`,
		verbose: `{"started":"2026-01-02T03:04:05.123456+00:00","stopped":null,"delayed":null,"purpose":"create","retries":1,"success":false,"failure":false,"message":"\u041e\u0448\u0438\u0431\u043a\u0430: na\u00efve \u2713 \ud83d\ude00 \u007f \u0001","subrefs":null}`,
	},
	{
		name:    "empty",
		rec:     Record{},
		json:    `{"retries":0,"success":false,"failure":false}`,
		verbose: `{"started":null,"stopped":null,"delayed":null,"purpose":null,"retries":0,"success":false,"failure":false,"message":null,"subrefs":null}`,
	},
}

func TestRecordEncode(t *testing.T) {
	for _, tc := range recordFixtures {
		got, err := tc.rec.MarshalJSON()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.json {
			t.Errorf("%s: MarshalJSON\n got %s\nwant %s", tc.name, got, tc.json)
		}
		if got := string(tc.rec.appendJSON(nil, true)); got != tc.verbose {
			t.Errorf("%s: verbose\n got %s\nwant %s", tc.name, got, tc.verbose)
		}
	}
}

func TestRecordEncodeDoesNotReorderCallersSubrefs(t *testing.T) {
	refs := []string{"b", "a"}
	_ = Record{Subrefs: refs}.appendJSON(nil, false)
	if refs[0] != "b" {
		t.Errorf("caller's subrefs were sorted in place: %v", refs)
	}
}

func TestRecordEncodeTruncatesToMicroseconds(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("", 3600))
	got := string(Record{Started: &at}.appendJSON(nil, false))
	want := `{"started":"2026-01-02T02:04:05.123456+00:00","retries":0,"success":false,"failure":false}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range recordFixtures {
		for _, encoded := range []string{tc.json, tc.verbose} {
			var got Record
			if err := json.Unmarshal([]byte(encoded), &got); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			want := tc.rec
			if len(want.Subrefs) > 0 {
				want.Subrefs = sortedSubrefs(want.Subrefs) // as stored
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: decoded %+v, want %+v", tc.name, got, want)
			}
			again, _ := got.MarshalJSON()
			if string(again) != tc.json {
				t.Errorf("%s: re-encoded %s, want %s", tc.name, again, tc.json)
			}
		}
	}
}

// Records as Kopf versions wrote them over the years, or as hand edits and
// the status storage leave them.
func TestRecordDecodeKopfHistory(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Record
	}{
		{
			// Kopf 0.27..1.35 wrote naive datetime.utcnow() values; the
			// docstring example of AnnotationsProgressStorage, default json
			// separators (with spaces) as in early annotations storage.
			name: "naive timestamps, spaced json, no success/failure",
			in:   `{"started": "2020-02-14T16:58:25.396364", "stopped": "2020-02-14T16:58:25.401844", "retries": 1, "success": true}`,
			want: Record{Started: ts("2020-02-14T16:58:25.396364Z"), Stopped: ts("2020-02-14T16:58:25.401844Z"), Retries: 1, Success: true},
		},
		{
			name: "naive without microseconds",
			in:   `{"started":"2020-02-14T16:58:25","retries":0}`,
			want: Record{Started: ts("2020-02-14T16:58:25Z")},
		},
		{
			name: "Z suffix",
			in:   `{"started":"2026-01-02T03:04:05.123456Z","delayed":"2026-01-02T03:04:35Z","purpose":"update","retries":3}`,
			want: Record{Started: t0, Delayed: ts("2026-01-02T03:04:35Z"), Purpose: "update", Retries: 3},
		},
		{
			name: "other offsets converted to UTC",
			in:   `{"started":"2026-01-02T14:04:05.123456+11:00","stopped":"2026-01-01T16:05:00-11:00"}`,
			want: Record{Started: t0, Stopped: ts("2026-01-02T03:05:00Z")},
		},
		{
			name: "nulls as written by verbose storages",
			in:   `{"started":null,"stopped":null,"delayed":null,"purpose":null,"retries":null,"success":null,"failure":null,"message":null,"subrefs":null}`,
			want: Record{},
		},
		{
			name: "empty purpose and subrefs mean none",
			in:   `{"purpose":"","subrefs":[]}`,
			want: Record{},
		},
		{
			name: "unknown fields of newer versions are ignored",
			in:   `{"started":"2026-01-02T03:04:05.123456+00:00","future":{"x":[1,2]},"retries":1}`,
			want: Record{Started: t0, Retries: 1},
		},
		{
			name: "escapes",
			in:   `{"message":"\u041e\u0448 \ud83d\ude00 <a> \/ \"q\"","subrefs":["fn\/<lambda>"]}`,
			want: Record{Message: "Ош 😀 <a> / \"q\"", Subrefs: []string{"fn/<lambda>"}},
		},
		{
			name: "whole float retries",
			in:   `{"retries":2.0}`,
			want: Record{Retries: 2},
		},
	} {
		var got Record
		if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestRecordDecodeCorrupt(t *testing.T) {
	for _, in := range []string{
		`[]`,
		`"a string"`,
		`123`,
		`true`,
		`{"started":1}`,
		`{"started":"yesterday"}`,
		`{"started":""}`,
		`{"stopped":"2026-02-30T00:00:00"}`,
		`{"delayed":{}}`,
		`{"retries":"1"}`,
		`{"retries":1.5}`,
		`{"retries":1e100}`,
		`{"success":"yes"}`,
		`{"failure":1}`,
		`{"purpose":1}`,
		`{"message":["x"]}`,
		`{"subrefs":"fn/sub1"}`,
		`{"subrefs":["fn/sub1",2]}`,
	} {
		var got Record
		// Direct calls: json.Unmarshal would reject the syntax itself first.
		err := got.UnmarshalJSON([]byte(in))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", in, err)
		}
	}
	var r Record
	if err := r.UnmarshalJSON([]byte(`{"started":`)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated JSON: err = %v, want ErrCorrupt", err)
	}
}

func TestRecordDecodeNullKeepsRecord(t *testing.T) {
	r := Record{Retries: 5}
	if err := r.UnmarshalJSON([]byte("null")); err != nil || r.Retries != 5 {
		t.Errorf("null: r=%+v err=%v", r, err)
	}
}

// The expectations are CPython's json.dumps() of the same strings.
func TestAppendPyStringMatchesPython(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain ascii", `"plain ascii"`},
		{"quote\" backslash\\ slash/", `"quote\" backslash\\ slash/"`},
		{"ctrl \x00\x01\x08\x09\x0a\x0b\x0c\x0d\x1f\x7f", `"ctrl \u0000\u0001\b\t\n\u000b\f\r\u001f\u007f"`},
		{"<>&'", `"<>&'"`},
		{"\u00e9 \u00df \u0451 \u4e2d\u6587", `"\u00e9 \u00df \u0451 \u4e2d\u6587"`},
		{"emoji \U0001f600 \U0001d11e", `"emoji \ud83d\ude00 \ud834\udd1e"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"\ufeffbom", `"\ufeffbom"`},
		{"\uffff", `"\uffff"`},
		{"\U0010ffff", `"\udbff\udfff"`},
	} {
		if got := string(appendPyString(nil, tc.in)); got != tc.want {
			t.Errorf("appendPyString(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestAppendPyStringMatchesPythonForInvalidUTF8(t *testing.T) {
	if got := string(appendPyString(nil, "a\xffb")); got != `"a\ufffdb"` {
		t.Errorf("got %s", got)
	}
	if got := string(appendPyString(nil, strings.Repeat("x", 3))); got != `"xxx"` {
		t.Errorf("got %s", got)
	}
}

// The fast decoder must accept only what the encoding/json path accepts, and
// decode it identically; the seeds cover Kopf's formats and the corrupt cases.
func FuzzDecodeFastAgreesWithSlow(f *testing.F) {
	for _, tc := range recordFixtures {
		f.Add(tc.json)
		f.Add(tc.verbose)
	}
	for _, s := range []string{
		`{}`, ` { "retries" : 1 , "success" : true } `, `{"retries":-0}`, `{"retries":01}`, `{"retries":1.0}`,
		`{"retries":1e2}`, `{"retries":123456789}`, `{"retries":1234567890}`, `{"retries":-}`, `{"success":tru}`,
		`{"success":true,"success":null}`, `{"started":"2026-01-02T03:04:05Z","started":null}`,
		`{"subrefs":[]}`, `{"subrefs":[ "a" , "b" ]}`, `{"subrefs":["a",]}`, `{"subrefs":[1]}`, `{"purpose":""}`,
		`{"message":"a\"b"}`, `{"message":"\u00e9"}`, "{\"message\":\"\xc3\xa9\"}", "{\"message\":\"\xff\"}",
		"{\"message\":\"a\tb\"}", `{"x":1}`, `{"Retries":1}`, `{"retries":1}x`, `{"retries":1`, `null`, `[]`, ``,
		`{"started":""}`, `{"started":"2026-02-30"}`, `{,}`, `{"a"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := decodeFast(s)
		if !ok {
			return
		}
		slow, err := decodeSlow([]byte(s))
		if err != nil || slow == nil {
			t.Fatalf("fast path accepted %q, slow path: %+v, %v", s, slow, err)
		}
		if !reflect.DeepEqual(&fast, slow) {
			t.Fatalf("%q: fast %+v, slow %+v", s, fast, *slow)
		}
	})
}
