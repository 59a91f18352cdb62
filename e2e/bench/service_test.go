package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// TestServiceDealsConnectionsRoundRobin: the webhook's service sends each
// new connection to the next backend, passes the bytes both ways, counts
// what each backend was sent, and stops with its context.
func TestServiceDealsConnectionsRoundRobin(t *testing.T) {
	const backends, rounds = 3, 2
	var (
		addrs []string
		wg    sync.WaitGroup
		mu    sync.Mutex
		got   = map[int][]string{} // the lines each backend received
	)
	t.Cleanup(wg.Wait) // after the listeners close: cleanups run last first
	for i := range backends {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		addrs = append(addrs, ln.Addr().String())
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				wg.Go(func() { // an echo server that says who it is
					defer c.Close()
					line, err := bufio.NewReader(c).ReadString('\n')
					if err != nil {
						return
					}
					mu.Lock()
					got[i] = append(got[i], line)
					mu.Unlock()
					_, _ = fmt.Fprintf(c, "%d:%s", i, line)
				})
			}
		})
	}

	svc, err := newService("127.0.0.1:0", addrs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); svc.run(ctx) }()

	sent := make([]int64, backends)
	for n := range backends * rounds {
		c, err := net.Dial("tcp", svc.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("call %d\n", n)
		if _, err := io.WriteString(c, line); err != nil {
			t.Fatal(err)
		}
		answer, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatalf("call %d: no answer through the service: %v", n, err)
		}
		if want := fmt.Sprintf("%d:%s", n%backends, line); answer != want {
			t.Errorf("call %d was answered %q, want %q: connections are dealt in turn", n, answer, want)
		}
		sent[n%backends] += int64(len(line))
		_ = c.Close()
	}
	cancel()
	<-done // run returns once every connection it forwarded is done

	for i, n := range svc.bytesIn() {
		if n != sent[i] {
			t.Errorf("backend %d was sent %d bytes, the service counts %d", i, sent[i], n)
		}
		if len(got[i]) != rounds {
			t.Errorf("backend %d received %q, want %d connections", i, got[i], rounds)
		}
		if c := svc.connections()[i]; c != rounds {
			t.Errorf("backend %d was dealt %d connections, want %d", i, c, rounds)
		}
	}
	if _, err := net.Dial("tcp", svc.ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("the service still accepts after its context ended (%v)", err)
	}
}

// TestSameAddrs: the service's address and its backends' share one port,
// each backend on its own loopback address, all free; the service's is not
// a loopback address if the machine has another.
func TestSameAddrs(t *testing.T) {
	front, backends, err := sameAddrs(4)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(front)
	if len(backends) != 4 || host != frontHost() {
		t.Fatalf("sameAddrs(4) = %s, %v; this machine's first address not a loopback one is %s", front, backends, frontHost())
	}
	for i, b := range append([]string{front}, backends...) {
		h, p, _ := net.SplitHostPort(b)
		if p != port || (i > 0 && h != fmt.Sprintf("127.0.0.%d", i+1)) {
			t.Errorf("address %d is %s, want 127.0.0.%d:%s", i, b, i+1, port)
		}
		ln, err := net.Listen("tcp", b)
		if err != nil {
			t.Errorf("%s is not free: %v", b, err)
			continue
		}
		_ = ln.Close()
	}
}
