package handling

import (
	"sync"
	"sync/atomic"
)

// Stopper is the stop signal of one daemon or timer: set once, with a reason.
type Stopper struct {
	once   sync.Once
	ch     chan struct{}
	reason atomic.Pointer[error]
}

// NewStopper returns a stopper that is not set.
func NewStopper() *Stopper { return &Stopper{ch: make(chan struct{})} }

// Stop sets the signal; the first reason wins. It reports whether this call
// set it.
func (s *Stopper) Stop(reason error) bool { return s.StopWith(reason, nil) }

// StopWith is Stop that runs also after the reason is recorded and before
// Stopping is closed: a daemon's ctx cancelled there is seen cancelled by
// whoever sees the signal, and whoever sees the ctx cancelled sees the
// reason.
func (s *Stopper) StopWith(reason error, also func()) bool {
	set := false
	s.once.Do(func() {
		s.reason.Store(&reason)
		if also != nil {
			also()
		}
		close(s.ch)
		set = true
	})
	return set
}

// Stopping is closed once the signal is set.
func (s *Stopper) Stopping() <-chan struct{} { return s.ch }

// Stopped reports whether the signal is set.
func (s *Stopper) Stopped() bool { return s.reason.Load() != nil }

// Reason is why the signal was set; nil while it is not.
func (s *Stopper) Reason() error {
	if r := s.reason.Load(); r != nil {
		return *r
	}
	return nil
}
