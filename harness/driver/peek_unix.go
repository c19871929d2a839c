//go:build unix

package driver

import "syscall"

// alive peeks at an idle connection without blocking: it is alive when
// nothing is there to read yet. End of stream (the server closed it) or
// bytes nobody asked for (a 408 before closing) mean it must not carry a
// request. Under TLS, bytes may be a session ticket the server sent after
// the handshake, indistinguishable from an alert once encrypted: only the
// end of stream counts.
func alive(raw syscall.RawConn, tls bool) bool {
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
	if n < 0 {
		return err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	}
	return n > 0 && tls
}
