package component

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Component is one part of a run.
type Component struct {
	// Name names the part in Run's error.
	Name string
	// Start runs the part until ctx ends, or until its work is done. It
	// calls Ready(ctx) once the parts after it may start; returning nil
	// counts as ready. An error stops the run.
	Start func(ctx context.Context) error
}

type readyKey struct{}

// Ready tells Run that the calling component is set up: the next one
// starts. It is a no-op outside of Run, and when called again.
func Ready(ctx context.Context) {
	if ready, ok := ctx.Value(readyKey{}).(func()); ok {
		ready()
	}
}

// started is a component that Run has started.
type started struct {
	Component
	cancel context.CancelFunc
	ready  chan struct{} // closed by Ready
	done   chan error    // gets Start's result, then is closed
}

// Run starts the components in order, each once the one before it is
// ready, and runs them until ctx ends, one fails, or all have returned.
// Then it stops them in the reverse order, each only after the ones after
// it have returned, and returns once all have: with nil, or the first
// error, naming its component. A component's ctx keeps ctx's values but
// not its end: it ends when Run stops that component.
func Run(ctx context.Context, components ...Component) error {
	var first error
	fail := func(c Component, err error) {
		if err != nil && first == nil {
			first = fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	// Every result comes on one channel, so that a component that returns,
	// ready or not, is heard at once, whichever one Run waits for.
	results := make(chan *started, len(components))
	returned := 0
	heard := func(s *started) *started {
		returned++
		fail(s.Component, <-s.done)
		return s
	}
	var running []*started
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, c := range components {
		if ctx.Err() != nil || first != nil {
			break
		}
		s := start(ctx, c, results, &wg)
		running = append(running, s)
		for waiting := true; waiting && first == nil; {
			select {
			case <-ctx.Done():
				waiting = false
			case <-s.ready:
				waiting = false
			case r := <-results:
				waiting = heard(r) != s
			}
		}
	}
	for first == nil && ctx.Err() == nil && returned < len(running) {
		select {
		case <-ctx.Done():
		case r := <-results:
			heard(r)
		}
	}
	for i := len(running) - 1; i >= 0; i-- {
		s := running[i]
		s.cancel()
		if err, ok := <-s.done; ok && !errors.Is(err, context.Canceled) {
			fail(s.Component, err)
		}
	}
	return first
}

// start starts c on a goroutine of wg; its result goes to s.done, and then
// s to results.
func start(ctx context.Context, c Component, results chan<- *started, wg *sync.WaitGroup) *started {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &started{Component: c, cancel: cancel, ready: make(chan struct{}), done: make(chan error, 1)}
	var once sync.Once
	cctx = context.WithValue(cctx, readyKey{}, func() { once.Do(func() { close(s.ready) }) })
	wg.Go(func() {
		s.done <- c.Start(cctx)
		close(s.done)
		results <- s
	})
	return s
}
