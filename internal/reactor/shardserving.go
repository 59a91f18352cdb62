package reactor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/indexing"
	"github.com/kopfgo/kopfgo/internal/kube"
)

// A resource with a global index (kopfgo.Global) keeps, when sharding, one
// watch of every object: the global indices need the objects of every
// shard, this replica's and the others'. A change of the shards held
// changes in place which of those objects the watch serves, shard by
// shard, as the per-shard watches of the other resources start and stop:
// the objects of a shard handed over stop being handled (handlers in flight
// finish, daemons and timers stop as in a pause) and leave the replica's
// own indices, but stay in the global ones; those of a shard taken over are
// served as if newly listed; those of the shards kept are untouched.
//
// The alternative, per-shard watches for serving beside a watch of the
// other shards for the global indices, would have fed the global indices
// from two watches (an object seen by both while a shard moves, counted
// twice or lost in between), held the kept objects twice in memory, and
// listed a shard's objects again at each handover; the in-place switch
// keeps one store, one listing and one feed of the global indices.

// served is one shard that a watch of every object serves. Its objects'
// workers run in ctx, which ends when the shard is handed over, and wg
// counts their goroutines, so that the shard stops alone.
type served struct {
	shard  int
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
	// active: its objects are served; until then (a shard taken back
	// while its previous serving still stops) they are foreign. Guarded
	// by the watcher's shardMu.
	active bool
	// prev is the previous serving of the same shard, closed once it has
	// stopped: two servings of one object never run at once.
	prev <-chan struct{}
	// done is closed once the shard, handed over, has stopped: its
	// workers have returned and its daemons and timers too.
	done chan struct{}
}

type servedKey struct{}

// servedIn is the shard served whose work ctx is (nil: the watch serves no
// shards apart).
func servedIn(ctx context.Context) *served {
	sv, _ := ctx.Value(servedKey{}).(*served)
	return sv
}

// shardOf is the shard an object's labels name; -1 if none.
func (w *watcher) shardOf(labels map[string]string) int {
	v, ok := labels[w.shardLabel]
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return i
}

// servingOf is the shard serving an object of these labels, nil if it is
// foreign (another replica's, or of no shard). Callers hold shardMu.
func (w *watcher) servingOf(labels map[string]string) *served {
	if sv := w.serving[w.shardOf(labels)]; sv != nil && sv.active {
		return sv
	}
	return nil
}

// reshard makes the shards served by a watch of every object those held,
// within ctx, the whole watch's. It returns what closes once each shard
// taken out has stopped, for the report of the halt (orchestrator.halted).
// A shard added is served at once, or once its previous serving has
// stopped.
func (w *watcher) reshard(ctx context.Context, held []int) []chan struct{} {
	w.shardMu.Lock()
	defer w.shardMu.Unlock()
	// The goroutines started below join the watch's wg: once the watch has
	// stopped (its stop waits for wg), its own stop halts everything.
	w.mu.Lock()
	if ctx.Err() != nil {
		w.mu.Unlock()
		return nil
	}
	w.wg.Add(1)
	w.mu.Unlock()
	defer w.wg.Done()
	var stopping []chan struct{}
	for i, sv := range w.serving {
		if slices.Contains(held, i) {
			continue
		}
		delete(w.serving, i)
		w.mu.Lock()
		sv.cancel(errShardMoved) // under mu: no worker starts in it after this
		w.mu.Unlock()
		if sv.active {
			w.forgetShard(ctx, sv)
		}
		stopping = append(stopping, sv.done)
		w.wg.Go(func() { w.halt(sv) })
	}
	for _, i := range held {
		if w.serving[i] != nil {
			continue
		}
		sctx, cancel := context.WithCancelCause(ctx)
		sv := &served{shard: i, cancel: cancel, done: make(chan struct{})}
		if prev := w.stopped[i]; prev != nil {
			select {
			case <-prev:
			default:
				sv.prev = prev
			}
		}
		sv.ctx = context.WithValue(sctx, servedKey{}, sv)
		w.serving[i] = sv
		w.stopped[i] = sv.done
		if sv.prev == nil {
			w.activate(sv)
			continue
		}
		w.wg.Go(func() {
			select {
			case <-sv.prev:
			case <-sv.ctx.Done():
				return
			}
			w.shardMu.Lock()
			defer w.shardMu.Unlock()
			if sv.ctx.Err() == nil {
				w.activate(sv)
			}
		})
	}
	return stopping
}

// activate serves a shard's objects, each as if newly listed: a pass each
// (resume handlers for the objects handled before, creation for the new
// ones; their daemons start) and the replica's own indices. Callers hold
// shardMu, so that the watch's observations come before or after it whole.
func (w *watcher) activate(sv *served) {
	sv.active = true
	w.Logger.Debug(fmt.Sprintf("Serving shard %d of %s.", sv.shard, described(w.key)))
	local := w.localIndexers()
	for _, obj := range w.store.List() {
		c, ok := obj.(*kube.Compact)
		if !ok || (w.scope != nil && !w.scope(c.Namespace)) {
			continue
		}
		u, err := c.Decode()
		if err != nil || w.shardOf(u.GetLabels()) != sv.shard {
			continue
		}
		w.serve(sv.ctx, c, u, local, handlers.EventListed, true, false)
	}
}

// forgetShard takes a shard's objects out of the replica's own indices
// when the shard is handed over: from then on the watch feeds them to the
// global indices alone. Callers hold shardMu.
func (w *watcher) forgetShard(ctx context.Context, sv *served) {
	local := w.localIndexers()
	if len(local) == 0 {
		return
	}
	w.mu.Lock()
	var keys []string
	for key, st := range w.states {
		if st.serving == sv {
			keys = append(keys, key)
		}
	}
	w.mu.Unlock()
	for _, key := range keys {
		if u, ok := w.latest(key); ok {
			w.unindex(ctx, u, local)
		}
	}
}

// halt waits until a shard handed over has stopped: its workers return
// (their passes in flight finish), then its objects' daemons and timers
// stop with the pause's reason, and the objects' states go.
func (w *watcher) halt(sv *served) {
	defer close(sv.done)
	if sv.prev != nil {
		<-sv.prev
	}
	sv.wg.Wait()
	w.quiesce(func(in *served) bool { return in == sv }, true, haltReason(sv.ctx))
	w.Logger.Debug(fmt.Sprintf("Stopped serving shard %d of %s.", sv.shard, described(w.key)))
}

// localIndexers are the replica's own indexers: not global.
func (w *watcher) localIndexers() []indexing.Indexer {
	return slices.DeleteFunc(slices.Clone(w.indexers), func(ix indexing.Indexer) bool { return ix.Spec().Global })
}
