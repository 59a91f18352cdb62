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
	_ "github.com/kopfgo/kopfgo/timers" // the path resolves; it exports nothing
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

	var reason causes.Reason = kopfgo.ReasonCreate
	if reason != causes.Create || reason.Title() != kopfgo.ReasonCreate.Title() {
		t.Errorf("causes.Create is not kopfgo.ReasonCreate: %q", causes.Create)
	}

	var byName indexing.Func[string, string] = func(ctx context.Context, o *handlers.Object) (map[string]string, error) {
		return map[string]string{o.Name: o.Namespace}, nil
	}
	var index *indexing.Index[string, string] = kopfgo.OnIndex(op.On, "v1/pods", kopfgo.IndexFunc[string, string](byName), kopfgo.ID("by_name"))
	if index.Len() != 0 {
		t.Errorf("a new index holds %d keys", index.Len())
	}
}
