// Package loopback finds free TCP ports on the loopback address for processes started later: the local
// cluster's components, and servers started by tests.
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// The components of a local cluster (and servers started by tests) listen on loopback ports chosen before
// they start. A port the kernel
// hands out as free (listening on port 0) comes from its ephemeral range, the range it also takes the source
// ports of outgoing connections from: with several clusters and their components connecting to each other
// under `go test ./...`, such a port was taken by a connection before the component bound it (CI failed with
// kube-controller-manager's "bind: address already in use"). So the ports are drawn below the ephemeral
// range, where no connection takes them, and each is checked free by binding it.

// lowestPort is the lowest port drawn.
const lowestPort = 10000

// ephemeralRangeFile is where Linux keeps its ephemeral port range.
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// FreePorts returns n distinct free TCP ports on the loopback address, below the kernel's ephemeral range
// when there is room (see above), else ones the kernel hands out. The listeners are all held until every
// port is known, so the ports differ from each other; another process could still take one before the
// component binds it, which then fails the start loudly rather than silently.
func FreePorts(n int) ([]int, error) {
	lo, ok := ephemeralLow(ephemeralRangeFile)
	if !ok || lo-lowestPort < 1000 {
		return portsFrom(n, func() int { return 0 })
	}
	return portsFrom(n, func() int { return lowestPort + rand.IntN(lo-lowestPort) })
}

// portsFrom binds n loopback ports, each drawn by next (0: the kernel picks), skipping ports in use.
func portsFrom(n int, next func() int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	var err error
	for tries := 0; len(ports) < n && tries < 100*n; tries++ {
		var l net.Listener
		if l, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", next())); err != nil {
			continue
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("finding a free loopback port, %w", err)
	}
	return ports, nil
}

// ephemeralLow reads the lower bound of the ephemeral port range from the file (two numbers); false when it
// cannot.
func ephemeralLow(file string) (int, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0, false
	}
	lo, err := strconv.Atoi(fields[0])
	return lo, err == nil && lo > 0
}
