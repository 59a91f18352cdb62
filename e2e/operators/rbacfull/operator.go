// Package rbacfull is a test operator for the e2e RBAC case: every kind of
// handler kopfgo has, on kopfexamples, so that running it with exactly the
// role `kopfgo rbac` generates exercises every request the role must allow.
package rbacfull

import (
	"context"
	"fmt"
	"time"

	"github.com/kopfgo/kopfgo"
)

var byField = kopfgo.OnIndex(kopfgo.On, "kopfexamples", indexByField, kopfgo.ID("by_field"))

func init() {
	kopfgo.On.Create("kopfexamples", create, kopfgo.ID("create"))
	kopfgo.On.Update("kopfexamples", update, kopfgo.ID("update"))
	kopfgo.On.Field("kopfexamples", "spec.field", field, kopfgo.ID("field"))
	kopfgo.On.Delete("kopfexamples", deleteFn, kopfgo.ID("delete"))
	kopfgo.On.Event("kopfexamples", event, kopfgo.ID("event"))
	kopfgo.On.Daemon("kopfexamples", daemon, kopfgo.ID("daemon"))
	kopfgo.On.Timer("kopfexamples", timer, kopfgo.ID("timer"), kopfgo.Interval(time.Second))
}

func indexByField(ctx context.Context, o *kopfgo.Object) (map[string]string, error) {
	return map[string]string{fmt.Sprint(o.Spec["field"]): o.Name}, nil
}

func create(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info(fmt.Sprintf("CREATE CALLED, index has %d keys", byField.Len()))
	if err := kopfgo.Info(ctx, c, "Created", "posted by the create handler"); err != nil {
		return nil, err
	}
	return map[string]any{"created": true}, nil
}

func update(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("UPDATE CALLED")
	return "updated", nil
}

func field(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info(fmt.Sprintf("FIELD CALLED %v", c.New))
	return nil, nil
}

func deleteFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("DELETE CALLED")
	return nil, nil
}

func event(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
	e.Logger.Info("EVENT CALLED " + string(e.Type))
	return nil, nil
}

func daemon(ctx context.Context, s *kopfgo.Spawn) (any, error) {
	s.Logger.Info("DAEMON STARTED")
	<-ctx.Done()
	return nil, nil
}

func timer(ctx context.Context, s *kopfgo.Spawn) (any, error) {
	s.Logger.Info("TIMER TICKED")
	return nil, nil
}
