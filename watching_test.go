package kopfgo

import (
	"context"
	"testing"

	"github.com/kopfgo/kopfgo/hierarchies"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/posting"
)

// An event handler's argument names its object for kopfgo.Info and the
// other posting functions, as a changing handler's does.
func TestEventsAboutAWatchEventsObject(t *testing.T) {
	rec := &recorder{}
	p := posting.New(posting.Config{Client: rec, Settings: config.Settings{}.WithDefaults().Posting})
	ctx := posting.WithPoster(context.Background(), p)
	e := &WatchEvent{Object: handlerArg().Object, Type: EventAdded}
	if err := Info(ctx, e, "Seen", "an event handler's object"); err != nil {
		t.Fatal(err)
	}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	p.Run(stopped)
	if len(rec.bodies) != 1 {
		t.Fatalf("%d events posted, want 1", len(rec.bodies))
	}
	if inv := rec.bodies[0]["involvedObject"].(map[string]any); inv["uid"] != "uid-1" || inv["kind"] != "KopfExample" {
		t.Errorf("the event is about %v, want the watch event's object", inv)
	}
	if err := hierarchies.Label(e, map[string]string{"a": "b"}); err == nil {
		t.Errorf("a WatchEvent is not taken as a handler's argument, which must not be changed in place")
	}
}
