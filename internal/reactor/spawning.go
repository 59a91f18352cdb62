package reactor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/causes"
	"github.com/kopfgo/kopfgo/daemons"
	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/patch"
)

// spawnMemory is what an object's memory keeps for its daemons and timers.
type spawnMemory struct {
	set *daemons.Set
	// essence is the object's essence at the previous pass, to tell
	// essential changes (which reset idle timers) from the rest.
	essence map[string]any
	// deleteHandled: the delete handlers have finished, and only daemons
	// still stopping keep the finalizer on the object.
	deleteHandled bool
}

// spawned is what a pass learns from the object's daemons and timers.
type spawned struct {
	// requires: the object needs the finalizer for them (compat: persistence-finalizer).
	requires bool
	// holding: some still run on the object, so its deletion must wait.
	holding bool
	// deleteHandled: see spawnMemory.
	deleteHandled bool
}

// spawn is step 3 of Kopf's processing order (compat: handlers-order): on every pass, spawn
// the daemons and timers the object matches, stop those it no longer
// matches, or stop them all when the object is being deleted. Their exits
// wake the object's worker, which is how the finalizer goes as soon as
// nothing needs it, without any touch patch.
func (p *processor) spawn(ctx context.Context, s *slot, u *unstructured.Unstructured, mem *memory, log *slog.Logger, memo *handlers.Memo) spawned {
	if len(p.spawning) == 0 {
		return spawned{}
	}
	sm := p.spawnMemoryOf(ctx, s.key, u, mem, log, memo)
	if causes.IsDeleting(u.Object) {
		sm.set.Stop(handlers.ErrResourceDeleted)
		holding := sm.set.Holding()
		return spawned{requires: holding, holding: holding, deleteHandled: p.deleteHandled(mem)}
	}
	if p.idleTimers {
		p.noteChanges(u.Object, mem, sm)
	}
	matching := p.matchingSpawning(u.Object)
	sm.set.Sync(matching)
	return spawned{requires: sm.set.Requires(matching), holding: sm.set.Holding()}
}

// matchingSpawning returns the daemons and timers whose filters match the
// object. Re-evaluated on every pass, so that an object that stops matching
// loses its daemons (ErrFiltersMismatch) and gets them back when it matches
// again (compat: daemons-filters, timers-filters).
func (p *processor) matchingSpawning(body map[string]any) []*handlers.Spawning {
	cause := &handlers.Cause{Body: body, Resource: p.res, Logger: p.cfg.Logger}
	var out []*handlers.Spawning
	for _, h := range p.spawning {
		if h.MatchesObject(cause) {
			out = append(out, h)
		}
	}
	return out
}

// noteChanges resets the idle timers when the object's essence differs from
// the previous pass's: spec, labels, annotations (not status, not the
// operator's own annotations). This is kopfgo's reading of "changes" for
// Idle (compat: timers-idle): the changes that would trigger update handlers, whether or
// not there are any; a timer's own status results do not postpone it.
func (p *processor) noteChanges(body map[string]any, mem *memory, sm *spawnMemory) {
	st := p.cfg.Settings.Persistence
	essence := st.ProgressStorage.Clear(st.DiffBaseStorage.Build(body, p.extraFields))
	mem.mu.Lock()
	prev := sm.essence
	sm.essence = essence
	mem.mu.Unlock()
	if prev != nil && len(diffbase.Compute(prev, essence)) > 0 {
		sm.set.Changed(p.cfg.Clock.Now())
	}
}

// spawnMemoryOf returns the object's daemons, creating the set on the first
// pass: its idle clock starts there, the first sighting being a change.
func (p *processor) spawnMemoryOf(ctx context.Context, key string, u *unstructured.Unstructured, mem *memory, log *slog.Logger, memo *handlers.Memo) *spawnMemory {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if mem.spawn != nil {
		return mem.spawn
	}
	uid, ns, name := string(u.GetUID()), u.GetNamespace(), u.GetName()
	mem.spawn = &spawnMemory{set: p.cfg.Daemons.NewSet(daemons.Object{
		Resource: p.res,
		Logger:   log,
		Memo:     memo,
		Live: func() (map[string]any, bool) {
			obj, ok, _ := p.store.GetByKey(key)
			if !ok {
				return nil, false
			}
			cur := obj.(*unstructured.Unstructured)
			return cur.Object, string(cur.GetUID()) == uid
		},
		Apply: func(ctx context.Context, pt *patch.Patch) error {
			logPatch(ctx, log, pt)
			_, err := p.client.Apply(ctx, p.res, ns, name, pt)
			if errors.Is(err, kube.ErrGone) {
				return nil
			}
			return err
		},
		Wake: func() { p.poke(ctx, key) },
	})}
	return mem.spawn
}

func (p *processor) deleteHandled(mem *memory) bool {
	mem.mu.Lock()
	defer mem.mu.Unlock()
	return mem.spawn != nil && mem.spawn.deleteHandled
}

// holdDeletion tells whether daemons still hold an object whose delete
// handlers are done; if so, it remembers that the handlers are done, so that
// the pass woken by the daemons' exit only releases the object.
func (p *processor) holdDeletion(mem *memory, sp spawned, log *slog.Logger) bool {
	if !sp.holding {
		return false
	}
	mem.mu.Lock()
	if mem.spawn != nil {
		mem.spawn.deleteHandled = true
	}
	mem.mu.Unlock()
	log.Debug("Deletion is held until the daemons and timers have exited.")
	return true
}

// releaseAfterDaemons is the end of a pass that runs no changing handlers:
// a resource with daemons and timers only, or an object whose delete
// handlers finished earlier. The finalizer goes once nothing holds the
// object (compat: daemons-finalizer).
func (p *processor) releaseAfterDaemons(ctx context.Context, u *unstructured.Unstructured, mem *memory, log *slog.Logger, pt *patch.Patch, sp spawned) (time.Duration, bool) {
	fin := p.cfg.Settings.Persistence.Finalizer
	if !causes.IsDeleting(u.Object) || !causes.HasFinalizer(u.Object, fin) || sp.holding {
		return -1, false
	}
	log.Debug("Removing the finalizer, thus allowing the actual deletion.")
	return p.applyGuarded(ctx, u, mem, log, pt, -1, false)
}

// forget stops the daemons of an object that is gone without them having
// been stopped (its finalizer was removed by someone else, or it was never
// required). It does not wait: the caller holds the processor's lock.
func (m *memory) forget() {
	m.mu.Lock()
	sm := m.spawn
	m.mu.Unlock()
	if sm != nil {
		sm.set.Forget()
	}
}

// poke wakes the object's worker, starting one if it has retired, for a
// pass that comes from the object's daemons rather than from the watch.
func (p *processor) poke(ctx context.Context, key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if mem := p.mems[key]; mem != nil {
		p.wakeLocked(ctx, key, mem, nil)
	}
}
