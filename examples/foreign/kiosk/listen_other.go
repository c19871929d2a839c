//go:build !unix

package kiosk

import "net"

// Listen listens on addr; a backlog of its own needs the unix socket
// calls, so elsewhere it is the system's.
func Listen(addr string, _ int) (net.Listener, error) { return net.Listen("tcp", addr) }
