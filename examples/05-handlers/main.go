// Package handlers registers a handler of every resource-changing kind:
// resume, create, update, delete and field handlers. Run:
//
//	kopfgo run ./examples/05-handlers
package handlers

import (
	"context"
	"fmt"

	"github.com/kopfgo/kopfgo"
)

const resource = "kopfexamples"

func Register(r kopfgo.Registrar) {
	r.Resume(resource, resumeFn1, kopfgo.ID("resume_fn_1"))
	r.Create(resource, createFn1, kopfgo.ID("create_fn_1"))
	r.Resume(resource, resumeFn2, kopfgo.ID("resume_fn_2"))
	r.Create(resource, createFn2, kopfgo.ID("create_fn_2"))
	r.Update(resource, updateFn, kopfgo.ID("update_fn"))
	r.Delete(resource, deleteFn1, kopfgo.ID("delete_fn_1"))
	r.Delete(resource, deleteFn2, kopfgo.ID("delete_fn_2"))
	r.Field(resource, "spec.field", fieldFn, kopfgo.ID("field_fn"))
}

func resumeFn1(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("RESUMED 1st")
	return nil, nil
}

func createFn1(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("CREATED 1st")
	return nil, nil
}

func resumeFn2(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("RESUMED 2nd")
	return nil, nil
}

func createFn2(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("CREATED 2nd")
	return nil, nil
}

func updateFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("UPDATED")
	return nil, nil
}

func deleteFn1(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("DELETED 1st")
	return nil, nil
}

func deleteFn2(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("DELETED 2nd")
	return nil, nil
}

func fieldFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info(fmt.Sprintf("FIELD CHANGED: %v -> %v", c.Old, c.New))
	return nil, nil
}
