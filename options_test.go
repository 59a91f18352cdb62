package kopfgo_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOptionsFitTheirHandlerKinds compiles registrations: every option
// where it fits must compile, and an option where it does not fit must not
// (aesthetics §8): the compiler, not a runtime check, says that an event
// handler has no retries or that an index has no old value.
func TestOptionsFitTheirHandlerKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package")
	}
	const header = `package typecheck

import (
	"context"

	"github.com/kopfgo/kopfgo"
)

func fn(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }
func efn(ctx context.Context, e *kopfgo.WatchEvent) (any, error) { return nil, nil }
func ifn(ctx context.Context, o *kopfgo.Object) (map[string]int, error) { return nil, nil }
func afn(ctx context.Context, a *kopfgo.Admission) error { return nil }
func any_(v any) bool { return true }
func obj(o *kopfgo.Object) bool { return true }
func chg(c *kopfgo.Change) bool { return true }

var op = kopfgo.New(kopfgo.Options{})

// forged tries to make an option outside kopfgo: a method of another
// package does not implement an unexported one.
type forged struct{}

func (forged) applyChange(h any) {}
`
	fits := header + `
func init() {
	l, a := kopfgo.Labels{"a": "1", "b": kopfgo.Present, "c": any_}, kopfgo.Annotations{"a": kopfgo.Absent}
	f, v, w := kopfgo.Field("spec.x"), kopfgo.Value(kopfgo.AnyOf(any_, kopfgo.Not(any_))), kopfgo.When(kopfgo.AllOf(obj))
	id, p, r := kopfgo.ID("x"), kopfgo.Param(1), kopfgo.Retries(3)
	op.On.Create("kex", fn, l, a, f, v, w, id, p, r, kopfgo.WhenChange(chg))
	op.On.Update("kex", fn, l, a, f, kopfgo.OldValue(1), kopfgo.NewValue(kopfgo.Absent), w, id, p, r)
	op.On.Field("kex", "spec.x", fn, l, a, v, w, id, p, r, kopfgo.WhenChange(chg))
	op.On.Delete("kex", fn, l, a, f, v, w, id, p, r, kopfgo.Optional(), kopfgo.WhenChange(chg))
	op.On.Resume("kex", fn, l, a, f, v, w, id, p, r, kopfgo.Deleted(), kopfgo.WhenChange(chg))
	op.On.Event("kex", efn, l, a, f, v, w, id, p)
	_ = kopfgo.OnIndex(op.On, "pods", ifn, l, a, f, v, w, id, p, r, kopfgo.Errors(kopfgo.ErrorsPermanent), kopfgo.Backoff(1))
	_ = kopfgo.Subhandler(context.Background(), fn, l, f, kopfgo.OldValue(1), r, id)
	op.On.Startup(func(ctx context.Context, a *kopfgo.Activity) error { return nil }, id, p, r)
	op.On.Validate("kex", afn, l, a, f, v, w, id, p, kopfgo.Operations("CREATE"), kopfgo.SubResource("*"), kopfgo.Persistent(true))
	op.On.Mutate("kex", afn, l, id, kopfgo.SideEffects(true), kopfgo.IgnoreFailures(true))
}
`
	misfits := map[string]string{
		"retries on events":       `op.On.Event("kex", efn, kopfgo.Retries(3))`,
		"errors on events":        `op.On.Event("kex", efn, kopfgo.Errors(kopfgo.ErrorsIgnored))`,
		"change filter on event":  `op.On.Event("kex", efn, kopfgo.WhenChange(chg))`,
		"old value on index":      `_ = kopfgo.OnIndex(op.On, "pods", ifn, kopfgo.OldValue(1))`,
		"optional on index":       `_ = kopfgo.OnIndex(op.On, "pods", ifn, kopfgo.Optional())`,
		"labels on startup":       `op.On.Startup(func(ctx context.Context, a *kopfgo.Activity) error { return nil }, kopfgo.Labels{"a": "b"})`,
		"forged option":           `op.On.Create("kex", fn, forged{})`,
		"optional on event":       `op.On.Event("kex", efn, kopfgo.Optional())`,
		"global on create":        `op.On.Create("kex", fn, kopfgo.Global())`,
		"retries on validate":     `op.On.Validate("kex", afn, kopfgo.Retries(3))`,
		"change filter on mutate": `op.On.Mutate("kex", afn, kopfgo.WhenChange(chg))`,
		"old value on validate":   `op.On.Validate("kex", afn, kopfgo.OldValue(1))`,
		"operations on create":    `op.On.Create("kex", fn, kopfgo.Operations("CREATE"))`,
		"converted option":        `op.On.Create("kex", fn, kopfgo.HandlerOption(func(h any) {}))`,
		"field on probe":          `op.On.Probe(func(ctx context.Context, a *kopfgo.Activity) (any, error) { return nil, nil }, kopfgo.Field("spec.x"))`,
	}
	var body strings.Builder
	lines := map[int]string{}
	body.WriteString(header + "\nfunc misfits() {\n")
	line := strings.Count(header, "\n") + 3
	for name, code := range misfits {
		fmt.Fprintf(&body, "\t%s\n", code)
		lines[line] = name
		line++
	}
	body.WriteString("}\n")

	build := func(src string) (string, error) {
		dir, err := os.MkdirTemp(".", ".typecheck-") // inside the module, ignored by ./...
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, "typecheck.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("go", "build", "-gcflags=-e", "-o", os.DevNull, "./"+dir).CombinedOutput()
		return string(out), err
	}
	if out, err := build(fits); err != nil {
		t.Fatalf("options where they fit do not compile: %v\n%s", err, out)
	}
	out, err := build(body.String())
	if err == nil {
		t.Fatalf("options where they do not fit compile")
	}
	failed := map[int]bool{}
	for _, m := range regexp.MustCompile(`typecheck\.go:(\d+):\d+: .*(does not implement|cannot use)`).FindAllStringSubmatch(out, -1) {
		var n int
		fmt.Sscan(m[1], &n)
		failed[n] = true
	}
	for n, name := range lines {
		if !failed[n] {
			t.Errorf("%s compiles (line %d); compiler output:\n%s", name, n, out)
		}
	}
}
