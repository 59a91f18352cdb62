package kopfgo_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
)

// TestOptionsFitTheirHandlerKinds checks that options are typed per handler
// kind: testdata/options/fit uses each option where it fits and compiles;
// every line marked "misfit" in testdata/options/misfit is a compile error
// (Idle on a daemon, a cancellation option on a timer, …).
func TestSpawningOptionsFitTheirHandlerKinds(t *testing.T) {
	if out, err := exec.Command("go", "build", "-o", os.DevNull, "./testdata/options/fit").CombinedOutput(); err != nil {
		t.Fatalf("the fitting options do not compile: %v\n%s", err, out)
	}
	// -gcflags=-e: every error, not only the first ten.
	out, err := exec.Command("go", "build", "-gcflags=-e", "-o", os.DevNull, "./testdata/options/misfit").CombinedOutput()
	if err == nil {
		t.Fatal("the misfit options compile")
	}
	src, rerr := os.ReadFile("testdata/options/misfit/misfit.go")
	if rerr != nil {
		t.Fatal(rerr)
	}
	lines := strings.Split(string(src), "\n")
	marked := 0
	for i, line := range lines {
		if !strings.HasSuffix(line, "// misfit") {
			continue
		}
		marked++
		at := "misfit.go:" + strconv.Itoa(i+1) + ":"
		if !strings.Contains(string(out), at) {
			t.Errorf("line %d compiles but should not: %s", i+1, strings.TrimSpace(line))
		}
	}
	if marked < 10 {
		t.Fatalf("only %d misfit lines found", marked)
	}
}

// Within a family of handler kinds, the options share one type, so an
// option of one kind only compiles on its siblings: it is a registration
// error, naming the handler and saying what to do, from Err and Run.
func TestMisfitsWithinAFamilyAreRegistrationErrors(t *testing.T) {
	spawn := func(ctx context.Context, s *kopfgo.Spawn) (any, error) { return nil, nil }
	for _, tt := range []struct {
		name     string
		register func(r kopfgo.Registrar)
		want     string
	}{
		{"optional on create", func(r kopfgo.Registrar) { r.Create("kex", namedChange, kopfgo.Optional()) },
			`On.Create("kex") handler github.com/kopfgo/kopfgo_test.namedChange: kopfgo.Optional fits delete handlers only`},
		{"optional on resume", func(r kopfgo.Registrar) { r.Resume("kex", namedChange, kopfgo.Optional()) },
			`On.Resume("kex") handler github.com/kopfgo/kopfgo_test.namedChange: kopfgo.Optional fits delete handlers only`},
		{"deleted on create", func(r kopfgo.Registrar) { r.Create("kex", namedChange, kopfgo.Deleted()) },
			`On.Create("kex") handler github.com/kopfgo/kopfgo_test.namedChange: kopfgo.Deleted fits resume handlers only`},
		{"deleted on field", func(r kopfgo.Registrar) { r.Field("kex", "spec.x", namedChange, kopfgo.Deleted()) },
			`On.Field("kex") handler github.com/kopfgo/kopfgo_test.namedChange: kopfgo.Deleted fits resume handlers only`},
		{"old value on delete", func(r kopfgo.Registrar) {
			r.Delete("kex", namedChange, kopfgo.Field("spec.x"), kopfgo.OldValue("x"))
		}, `On.Delete("kex") handler github.com/kopfgo/kopfgo_test.namedChange: `},
		{"new value on resume", func(r kopfgo.Registrar) {
			r.Resume("kex", namedChange, kopfgo.Field("spec.x"), kopfgo.NewValue("x"))
		}, `On.Resume("kex") handler github.com/kopfgo/kopfgo_test.namedChange: `},
		{"interval on a daemon", func(r kopfgo.Registrar) { r.Daemon("kex", namedSpawn, kopfgo.Interval(time.Second)) },
			`On.Daemon("kex") handler github.com/kopfgo/kopfgo_test.namedSpawn: Interval, Idle and Sharp fit timers only`},
		{"idle on a typed daemon", func(r kopfgo.Registrar) { kopfgo.OnDaemon(r, "kex", namedTypedSpawn, kopfgo.Idle(time.Second)) },
			`On.Daemon("kex") handler github.com/kopfgo/kopfgo_test.namedTypedSpawn: Interval, Idle and Sharp fit timers only`},
		{"sharp on a daemon", func(r kopfgo.Registrar) { r.Daemon("kex", spawn, kopfgo.ID("d"), kopfgo.Sharp()) },
			`On.Daemon("kex") handler "d" (github.com/kopfgo/kopfgo_test.TestMisfitsWithinAFamilyAreRegistrationErrors.func1): Interval, Idle and Sharp fit timers only`},
		{"cancellation on a timer", func(r kopfgo.Registrar) {
			r.Timer("kex", namedSpawn, kopfgo.Interval(time.Second), kopfgo.CancellationTimeout(time.Second))
		}, `On.Timer("kex") handler github.com/kopfgo/kopfgo_test.namedSpawn: CancellationBackoff, CancellationTimeout and CancellationPolling fit daemons only`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			op := kopfgo.New(kopfgo.Options{})
			tt.register(op.On)
			err := op.Err()
			if !errors.Is(err, kopfgo.ErrRegistration) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Err = %v\nwant an ErrRegistration with %q", err, tt.want)
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
				t.Errorf("%d errors, want one:\n%v", n, err)
			}
		})
	}
	// The same options where they fit are no mistake.
	op := kopfgo.New(kopfgo.Options{})
	op.On.Delete("kex", namedChange, kopfgo.Optional())
	op.On.Resume("kex", namedChange, kopfgo.Deleted())
	op.On.Daemon("kex", namedSpawn, kopfgo.CancellationBackoff(time.Second), kopfgo.CancellationTimeout(time.Second), kopfgo.CancellationPolling(time.Second))
	op.On.Timer("kex", spawn, kopfgo.ID("t"), kopfgo.Interval(time.Second), kopfgo.Idle(time.Second), kopfgo.Sharp())
	if err := op.Err(); err != nil {
		t.Fatal(err)
	}
}
