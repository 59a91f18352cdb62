package testlog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func TestBufferCollectsConcurrentWritesAndTellsOfEach(t *testing.T) {
	var writes atomic.Int32
	b := &Buffer{OnWrite: func() { writes.Add(1) }}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { fmt.Fprintf(b, "line %d\n", i) })
	}
	wg.Wait()
	if n := b.Count("line "); n != 8 {
		t.Errorf("%d lines in %q, want 8", n, b.String())
	}
	if n := writes.Load(); n != 8 {
		t.Errorf("told of %d writes, want 8", n)
	}
}
