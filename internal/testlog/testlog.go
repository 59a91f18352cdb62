// Package testlog is the log destination of kopfgo's tests: operators log
// from many goroutines while a test reads what was written, so the buffer
// must be safe for both, and tests that wait for a line want to be told of
// every write rather than poll.
package testlog

import (
	"strings"
	"sync"
)

// Buffer collects what is written to it. Its zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
	// OnWrite, if set, is called after every write, outside the lock.
	OnWrite func()
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.b.Write(p)
	b.mu.Unlock()
	if b.OnWrite != nil {
		b.OnWrite()
	}
	return n, err
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Count is how many times substr occurs in what was written.
func (b *Buffer) Count(substr string) int { return strings.Count(b.String(), substr) }
