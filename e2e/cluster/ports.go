package cluster

import (
	"fmt"
	"net"
)

// freePorts returns n distinct TCP ports that were free on 127.0.0.1 a moment
// ago. All listeners stay open until every port is picked, so the kernel cannot
// hand out the same port twice; another process may still take one before the
// server binds it, which Start handles by retrying with new ports.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("picking a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
