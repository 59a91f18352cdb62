// Package peering is Kopf's example 06-peering: an operator with nothing but
// a creation handler, to run twice and watch the two peer. Run it with:
//
//	kubectl apply -k deploy/crds && kubectl apply -k deploy/peering  # CRDs first, established
//	kopfgo run ./examples/06-peering --verbose           # shell A
//	kopfgo run ./examples/06-peering --verbose           # shell B: both stand by
//	kopfgo run ./examples/06-peering --verbose --dev     # shell B again: A stands by
package peering

import (
	"context"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Create("kopfexamples", createFn, kopfgo.ID("create_fn"))
}

func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	return nil, nil
}
