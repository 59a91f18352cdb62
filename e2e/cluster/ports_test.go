package cluster

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortsAreDistinctAndBindable(t *testing.T) {
	ports, err := freePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 5 {
		t.Fatalf("got %d ports, want 5", len(ports))
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || p > 65535 {
			t.Errorf("port %d out of range", p)
		}
		if seen[p] {
			t.Errorf("port %d picked twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free after picking: %v", p, err)
			continue
		}
		l.Close()
	}
}
