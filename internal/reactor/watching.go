package reactor

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/indexing"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/patch"
)

// Per watch event, in Kopf's order (compat: handlers-order): the indexers see the event
// first, in the informer's callback, so that whatever runs next sees indices
// that include it; then the object's worker runs the event handlers for
// every queued event, and only then the changing handlers for the latest
// state. Changing handlers are level-based and see the latest state only;
// event handlers are not, and see each event.

// rawEvent is one watch event queued for the event handlers.
type rawEvent struct {
	typ handlers.EventType
	obj *unstructured.Unstructured
	mem *memory // of the object as the event saw it
}

// observe is the informer's callback for every event of every object.
func (p *processor) observe(ctx context.Context, obj any, typ handlers.EventType, initial, deleted bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if p.scope != nil && !p.scope(u.GetNamespace()) {
		return
	}
	if len(p.indexers) > 0 {
		p.index(ctx, u, deleted)
	}
	if len(p.handlers) == 0 && len(p.events) == 0 && len(p.spawning) == 0 {
		return // indexers only: no worker needed
	}
	var ev *rawEvent
	if len(p.events) > 0 {
		ev = &rawEvent{typ: typ, obj: u}
	}
	p.notify(ctx, obj, initial, deleted, ev)
}

// index feeds one event to the resource's indexers. It runs in the
// informer's callback: indexers must be fast, and they never wait for a
// worker, so that no limit on workers can deadlock the startup (compat: indices-worker-limit).
func (p *processor) index(ctx context.Context, u *unstructured.Unstructured, deleted bool) {
	key, err := cache.MetaNamespaceKeyFunc(u)
	if err != nil {
		return
	}
	uid := string(u.GetUID())
	p.mu.Lock()
	mem := p.mems[key]
	if mem == nil || mem.uid != uid {
		mem = p.newMemory(uid)
		p.mems[key] = mem
	}
	if deleted && len(p.handlers) == 0 && len(p.events) == 0 {
		delete(p.mems, key) // nobody else forgets it
	}
	p.mu.Unlock()

	ob := indexing.Observation{
		Deleted: deleted,
		Cause: &handlers.Cause{
			Body: u.Object, Resource: p.res, Patch: &patch.Patch{}, // never applied, as in Kopf
			Logger: p.localLogger(u), Memo: mem.memo,
		},
		Now:            p.cfg.Clock.Now(),
		DefaultBackoff: p.cfg.Settings.Execution.DefaultBackoff,
	}
	hctx := p.handlerContext(ctx)
	for _, ix := range p.indexers {
		ix.Observe(hctx, ob)
	}
}

// dispatch runs the event handlers for the events queued since the last
// pass, in their order.
func (p *processor) dispatch(ctx context.Context, s *slot) {
	p.mu.Lock()
	evs := s.events
	s.events = nil
	p.mu.Unlock()
	hctx := p.handlerContext(ctx)
	for _, ev := range evs {
		if ctx.Err() != nil {
			return
		}
		u := ev.obj
		log := p.localLogger(u)
		pt := &patch.Patch{}
		handlers.HandleEvent(hctx, p.events, ev.typ, &handlers.Cause{
			Body: u.Object, Resource: p.res, Patch: pt, Logger: log, Memo: ev.mem.memo,
		}, p.invoke)
		// Results and patches of event handlers are applied as Kopf does,
		// except for a deleted object, which has nothing left to patch.
		if !pt.IsEmpty() && ev.typ != handlers.EventDeleted {
			p.apply(ctx, u, ev.mem, log, pt, -1)
		}
	}
}

// newMemory starts an object's memory, its memo a shallow copy of the
// operator's memo (compat: memos-operator).
func (p *processor) newMemory(uid string) *memory {
	memo := &handlers.Memo{}
	if p.cfg.Memo != nil {
		memo = p.cfg.Memo.Copy()
	}
	return &memory{uid: uid, memo: memo}
}

// waitIndexed holds a worker until every index has seen the initial
// listings (compat: indices-complete); false if the operator stops meanwhile.
func (p *processor) waitIndexed(ctx context.Context) bool {
	if p.cfg.Ready == nil {
		return true
	}
	select {
	case <-p.cfg.Ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// localLogger is the object's logger that never posts Kubernetes Events:
// event handlers and indexers log only locally, as in Kopf (compat: handlers-event, indices-logging).
func (p *processor) localLogger(u *unstructured.Unstructured) *slog.Logger {
	return logging.WithObject(p.cfg.Logger, logging.ObjectRef{
		APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(),
		UID: string(u.GetUID()), Namespace: u.GetNamespace(),
	})
}

// handlerContext is the context handlers run in: the one Run gives them,
// which outlives the operator's stop by Queueing.ExitTimeout and carries
// what kopfgo.RESTConfig and kopfgo.Info need.
func (p *processor) handlerContext(ctx context.Context) context.Context {
	if p.cfg.handlerCtx != nil {
		return p.cfg.handlerCtx
	}
	return ctx
}
