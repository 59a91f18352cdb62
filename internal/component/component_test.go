package component

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// journal records what the components did, in order.
type journal struct {
	mu    sync.Mutex
	lines []string
	added chan struct{} // signalled on every line
}

func newJournal() *journal { return &journal{added: make(chan struct{}, 100)} }

func (j *journal) add(line string) {
	j.mu.Lock()
	j.lines = append(j.lines, line)
	j.mu.Unlock()
	j.added <- struct{}{}
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.lines)
}

// await waits until line is in the journal.
func (j *journal) await(t *testing.T, line string) {
	t.Helper()
	for !slices.Contains(j.get(), line) {
		<-j.added
	}
}

// script is what one component does: it fails with errs[0] before Ready,
// or with errs[1] after it, or with errs[2] when stopped; nil: it goes on.
// step: it returns nil before Ready. never: it never calls Ready.
type script struct {
	name  string
	errs  [3]error
	step  bool
	never bool
}

func (s script) component(j *journal) Component {
	return Component{Name: s.name, Start: func(ctx context.Context) error {
		j.add("start " + s.name)
		if s.step {
			return nil
		}
		if s.errs[0] != nil {
			return s.errs[0]
		}
		if !s.never {
			Ready(ctx)
			if s.errs[1] != nil {
				return s.errs[1]
			}
		}
		<-ctx.Done()
		j.add("stop " + s.name)
		return s.errs[2]
	}}
}

var errBoom, errLater = errors.New("boom"), errors.New("later")

func TestRun(t *testing.T) {
	for _, c := range []struct {
		name    string
		scripts []script
		// cancelAt: Run's ctx is cancelled once this line is in the journal.
		cancelAt string
		want     []string
		err      string // Run's error; "": nil
	}{{
		name:     "each starts once the one before is ready; they stop in reverse",
		scripts:  []script{{name: "a"}, {name: "b"}, {name: "c"}},
		cancelAt: "start c",
		want:     []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"},
	}, {
		name:     "a component not ready holds the next one back",
		scripts:  []script{{name: "a", never: true}, {name: "b"}},
		cancelAt: "start a",
		want:     []string{"start a", "stop a"},
	}, {
		name:     "returning nil counts as ready and ends nothing",
		scripts:  []script{{name: "a"}, {name: "step", step: true}, {name: "c"}},
		cancelAt: "start c",
		want:     []string{"start a", "start step", "start c", "stop c", "stop a"},
	}, {
		name:    "an error before ready stops the ones before, and starts no more",
		scripts: []script{{name: "a"}, {name: "b", errs: [3]error{errBoom}}, {name: "c"}},
		want:    []string{"start a", "start b", "stop a"},
		err:     "b: boom",
	}, {
		name:    "an error after ready stops the others",
		scripts: []script{{name: "a"}, {name: "b"}, {name: "c", errs: [3]error{nil, errBoom}}},
		want:    []string{"start a", "start b", "start c", "stop b", "stop a"},
		err:     "c: boom",
	}, {
		name:     "an error when stopped is Run's",
		scripts:  []script{{name: "a", errs: [3]error{nil, nil, errLater}}, {name: "b"}},
		cancelAt: "start b",
		want:     []string{"start a", "start b", "stop b", "stop a"},
		err:      "a: later",
	}, {
		name:    "the first error wins",
		scripts: []script{{name: "a", errs: [3]error{nil, nil, errLater}}, {name: "b", errs: [3]error{nil, errBoom}}},
		want:    []string{"start a", "start b", "stop a"},
		err:     "b: boom",
	}, {
		name:     "a component that stops with its ctx's error stopped well",
		scripts:  []script{{name: "a", errs: [3]error{nil, nil, context.Canceled}}},
		cancelAt: "start a",
		want:     []string{"start a", "stop a"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			j := newJournal()
			var components []Component
			for _, s := range c.scripts {
				components = append(components, s.component(j))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancelAt != "" {
				go func() {
					j.await(t, c.cancelAt)
					cancel()
				}()
			}
			err := Run(ctx, components...)
			if got := j.get(); !slices.Equal(got, c.want) {
				t.Errorf("journal:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
			switch {
			case c.err == "" && err != nil:
				t.Errorf("Run: %v, want nil", err)
			case c.err != "" && (err == nil || err.Error() != c.err):
				t.Errorf("Run: %v, want %q", err, c.err)
			case c.err != "" && !errors.Is(err, errBoom) && !errors.Is(err, errLater):
				t.Errorf("Run: %v does not wrap the component's error", err)
			}
		})
	}
}

// Run returns only once every component has returned, however long one
// takes to stop.
func TestRunJoinsEveryComponent(t *testing.T) {
	stopping, release := make(chan struct{}), make(chan struct{})
	returned := false
	slow := Component{Name: "slow", Start: func(ctx context.Context) error {
		Ready(ctx)
		<-ctx.Done()
		close(stopping)
		<-release
		returned = true
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	quick := Component{Name: "quick", Start: func(ctx context.Context) error {
		cancel() // both are running
		<-ctx.Done()
		return nil
	}}
	go func() { done <- Run(ctx, slow, quick) }()
	<-stopping
	select {
	case <-done:
		t.Fatal("Run returned while a component was still stopping")
	default:
	}
	close(release)
	if err := <-done; err != nil || !returned {
		t.Fatalf("Run: %v; the slow component returned: %v", err, returned)
	}
}

// A component's ctx keeps the values of Run's; a run whose components
// have all returned is over; a run whose ctx has ended starts nothing.
func TestRunOfComponentsThatReturn(t *testing.T) {
	type key struct{}
	var got []any
	step := Component{Name: "step", Start: func(ctx context.Context) error {
		got = append(got, ctx.Value(key{}))
		return nil
	}}
	if err := Run(context.WithValue(context.Background(), key{}, "v"), step, step); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []any{"v", "v"}) {
		t.Errorf("the components saw %v, want [v v]", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, step); err != nil || len(got) != 2 {
		t.Errorf("Run of an ended ctx: %v; the component ran %d times, want 2 (not again)", err, len(got))
	}
}
