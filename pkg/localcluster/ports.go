package localcluster

import (
	"fmt"
	"net"
)

// freePorts asks the kernel for n distinct free TCP ports on the loopback address. The listeners are
// all held until every port is known, so the ports differ from each other; another process could still
// take one before the component binds it, which then fails the start loudly rather than silently.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port, %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
