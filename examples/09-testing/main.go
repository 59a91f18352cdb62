// Package testing09 is an operator tested with kopfgo's test kit
// (kopfgotest): a unit test calls its handler without a cluster, and an
// end-to-end test runs it on a real one, as Kopf's KopfRunner does. Run it
// with `kopfgo run ./examples/09-testing`; test it with
//
//	go test ./examples/09-testing                # the unit test
//	go test -tags e2e ./examples/09-testing      # and the operator on a cluster
package testing09

import (
	"context"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Create("kopfexamples", createFn, kopfgo.ID("create_fn"))
}

func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("Something was logged here.")
	return nil, nil
}
