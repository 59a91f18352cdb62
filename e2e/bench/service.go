package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// service stands in front of the replicas' webhook servers as a Service
// does in a cluster: the API server calls one address, and each TCP
// connection it opens goes to the next replica (kube-proxy's IPVS mode
// deals connections round-robin; its iptables mode, at random). The API
// server calls admission webhooks over HTTP/1.1, one request at a time
// per connection, and opens as many connections as it has calls in
// flight, so concurrent creations spread over the replicas; without it,
// the bench's webhook configuration names one replica, which then answers
// every review. The TLS passes through untouched: the replicas share one
// certificate (kept in a Secret), as they do behind a Service.
type service struct {
	ln       net.Listener
	backends []string
	next     atomic.Uint64
	// conns and in count, per backend, the connections dealt to it and the
	// bytes the API server sent it (its reviews, TLS included).
	conns, in []atomic.Int64
}

// newService listens on addr for the backends; run serves it.
func newService(addr string, backends []string) (*service, error) {
	if len(backends) == 0 {
		return nil, errors.New("a service needs backends")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the webhook's service on %s: %w", addr, err)
	}
	return &service{ln: ln, backends: backends, conns: make([]atomic.Int64, len(backends)), in: make([]atomic.Int64, len(backends))}, nil
}

// run forwards connections until ctx ends, then closes the listener and
// every connection, and returns once they are all done.
func (s *service) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() {
		<-ctx.Done()
		_ = s.ln.Close()
	})
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed, or broken: the webhook's calls then fail open, and the bench reports them
		}
		i := int((s.next.Add(1) - 1) % uint64(len(s.backends)))
		s.conns[i].Add(1)
		wg.Go(func() { s.forward(ctx, c, i) })
	}
}

// forward pipes one connection to backend i and back.
func (s *service) forward(ctx context.Context, c net.Conn, i int) {
	defer c.Close()
	var d net.Dialer
	b, err := d.DialContext(ctx, "tcp", s.backends[i])
	if err != nil {
		return // the API server sees the connection close: a failed call
	}
	defer b.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close(); _ = b.Close() })
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(c, b)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(counting{b, &s.in[i]}, c)
	_ = b.(*net.TCPConn).CloseWrite()
	<-done
}

// counting counts the bytes written through it as they pass, so that a
// connection kept open counts too.
type counting struct {
	io.Writer
	n *atomic.Int64
}

func (w counting) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	w.n.Add(int64(n))
	return n, err
}

// connections are the connections dealt to each backend so far.
func (s *service) connections() []int64 {
	out := make([]int64, len(s.conns))
	for i := range s.conns {
		out[i] = s.conns[i].Load()
	}
	return out
}

// bytesIn are the bytes each backend has been sent so far.
func (s *service) bytesIn() []int64 {
	out := make([]int64, len(s.in))
	for i := range s.in {
		out[i] = s.in[i].Load()
	}
	return out
}

// sameAddrs are n+1 addresses with one port, free on each: the service's,
// on an address of this machine's that is not a loopback one where there
// is one, and its n backends' on 127.0.0.2, 127.0.0.3, … (the loopback
// network is all of 127/8), for webhook servers whose URL, built from
// their own port, must name the service's. A Service's address is not a
// loopback one, and the API server treats loopback URLs apart: it lets
// them use HTTP/2 (k8s.io/apiserver's pkg/util/webhook, isLocalHost),
// where any other is called over HTTP/1.1, a connection per call in
// flight. kopfgo's webhook server offers only HTTP/1.1, so a loopback
// front spreads the reviews too (a run on 2026-12-05 with the front on
// 127.0.0.1: 14–15 connections per replica); the other address keeps the
// bench as a cluster is for a server that would offer HTTP/2.
func sameAddrs(n int) (front string, backends []string, err error) {
	host := frontHost()
	for range 20 {
		first, err := freeAddr()
		if err != nil {
			return "", nil, err
		}
		_, port, _ := net.SplitHostPort(first)
		front = net.JoinHostPort(host, port)
		backends = backends[:0]
		free := true
		for i := range n + 1 {
			addr := front
			if i > 0 {
				addr = net.JoinHostPort("127.0.0."+strconv.Itoa(1+i), port)
				backends = append(backends, addr)
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				free = false
				break
			}
			_ = l.Close()
		}
		if free {
			return front, backends, nil
		}
	}
	return "", nil, errors.New("no port is free on the service's address and the backends' at once")
}

// frontHost is the first IPv4 address of this machine's that is not a
// loopback one, or 127.0.0.1.
func frontHost() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() && ip.IP.IsGlobalUnicast() {
				return ip.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
