//go:build unix

package driver

import "syscall"

// alive peeks at an idle connection without blocking: it is alive when
// nothing is there to read yet. End of stream (the server closed it) or
// bytes nobody asked for (a 408 before closing) mean it must not carry a
// request.
func alive(raw syscall.RawConn) bool {
	if raw == nil {
		return true
	}
	var b [1]byte
	var err error
	n := -1
	if cerr := raw.Read(func(fd uintptr) bool {
		n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	}); cerr != nil {
		return false
	}
	return n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
}
