package kopfgo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/causes"
	_ "github.com/kopfgo/kopfgo/daemons" // the path resolves; it exports nothing
	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/indexing"
	"github.com/kopfgo/kopfgo/timers"
)

// TestFacadesKeepTheOldImportPaths uses each facade package the way code
// written before the engines moved under internal/ does: its types are
// kopfgo's, its errors match kopfgo's with errors.Is, and its functions
// are the engine's.
func TestFacadesKeepTheOldImportPaths(t *testing.T) {
	var fn handlers.ChangeFunc = func(ctx context.Context, c *handlers.Change) (any, error) {
		return nil, &handlers.TemporaryError{Err: errors.New("later"), Delay: time.Second}
	}
	op := kopfgo.New(quiet)
	op.On.Create("kopfexamples", kopfgo.ChangeFunc(fn), kopfgo.ID("old_path"))
	if err := op.Err(); err != nil {
		t.Errorf("a handler typed through the handlers path does not register: %v", err)
	}
	_, err := fn(context.Background(), &kopfgo.Change{})
	var temporary *kopfgo.TemporaryError
	if !errors.As(err, &temporary) {
		t.Errorf("handlers.TemporaryError is not kopfgo.TemporaryError: %T", err)
	}
	if !errors.Is(fmt.Errorf("stopped: %w", kopfgo.ErrOperatorExiting), handlers.ErrOperatorExiting) {
		t.Error("handlers.ErrOperatorExiting is not kopfgo.ErrOperatorExiting")
	}

	var reason kopfgo.Reason = causes.Detect(causes.Input{Body: map[string]any{}, Finalizer: "f", New: map[string]any{}})
	if reason != kopfgo.ReasonCreate {
		t.Errorf("causes.Detect of a never-handled object = %q, want %q", reason, causes.Create)
	}

	delay, next := timers.Schedule{Interval: time.Minute}.AfterSuccess(time.Unix(0, 0), time.Unix(0, 0))
	if next != timers.Sleep || delay != time.Minute {
		t.Errorf("timers.Schedule.AfterSuccess = %v, %v; want %v, %v", delay, next, time.Minute, timers.Sleep)
	}

	var byName indexing.Func[string, string] = func(ctx context.Context, o *handlers.Object) (map[string]string, error) {
		return map[string]string{o.Name: o.Namespace}, nil
	}
	var index *indexing.Index[string, string] = kopfgo.OnIndex(op.On, "v1/pods", kopfgo.IndexFunc[string, string](byName), kopfgo.ID("by_name"))
	if index.Len() != 0 {
		t.Errorf("a new index holds %d keys", index.Len())
	}
}
