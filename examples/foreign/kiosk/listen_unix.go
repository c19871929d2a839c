//go:build unix

package kiosk

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
)

// Listen listens on addr (ip:port, IPv4) with a listen backlog of backlog:
// net.Listen always asks for the system's maximum, so the team's small
// backlog takes the socket calls themselves.
func Listen(addr string, backlog int) (net.Listener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("listen %s: an IPv4 ip:port is needed", addr)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	syscall.CloseOnExec(fd)
	sa := &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err == nil {
		err = syscall.Bind(fd, sa)
		if err == nil {
			err = syscall.Listen(fd, backlog)
		}
		if err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
	} else {
		syscall.Close(fd)
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	f := os.NewFile(uintptr(fd), "kiosk-listener")
	defer f.Close() // FileListener dups it
	return net.FileListener(f)
}
