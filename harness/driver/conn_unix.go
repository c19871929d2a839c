//go:build unix

package driver

import (
	"net"
	"os"
	"syscall"
)

// peeker peeks at one idle connection without blocking. It is made once
// per connection, so that a peek per request allocates nothing.
type peeker struct {
	raw syscall.RawConn
	n   int
	err error
	// peek is the callback given to raw.Read, bound once.
	peek func(fd uintptr) bool
}

func newPeeker(raw syscall.RawConn) *peeker {
	p := &peeker{raw: raw}
	p.peek = func(fd uintptr) bool {
		var b [1]byte
		p.n, _, p.err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	}
	return p
}

// alive peeks at an idle connection without blocking: it is alive when
// nothing is there to read yet. End of stream (the server closed it) or
// bytes nobody asked for (a 408 before closing) mean it must not carry a
// request. Under TLS, bytes may be a session ticket the server sent after
// the handshake, indistinguishable from an alert once encrypted: only the
// end of stream counts.
func (p *peeker) alive(tls bool) bool {
	if p == nil || p.raw == nil {
		return true
	}
	p.n, p.err = -1, nil
	if cerr := p.raw.Read(p.peek); cerr != nil {
		return false
	}
	if p.n < 0 {
		return p.err == syscall.EAGAIN || p.err == syscall.EWOULDBLOCK
	}
	return p.n > 0 && tls
}

// writer writes a request and waits for its answer on one plain TCP
// connection, made once per connection.
type writer struct {
	raw syscall.RawConn
	b   []byte
	n   int
	err error
	// write is the callback given to raw.Read, bound once: it writes b,
	// then has raw.Read wait until the answer can be read.
	write func(fd uintptr) bool
}

func newWriter(raw syscall.RawConn) *writer {
	w := &writer{raw: raw}
	w.write = func(fd uintptr) bool {
		if w.n == len(w.b) {
			// Woken: the answer (or the connection's end) is there.
			return true
		}
		n, err := syscall.Write(int(fd), w.b[w.n:])
		for err == syscall.EINTR {
			n, err = syscall.Write(int(fd), w.b[w.n:])
		}
		if n > 0 {
			w.n += n
		}
		if err != nil {
			if err != syscall.EAGAIN {
				w.err = err
			}
			return true
		}
		// All of it sent: wait for the answer; otherwise (a full send
		// buffer) the rest goes by the ordinary blocking write.
		return w.n < len(w.b)
	}
	return w
}

// writeWait writes b to c and waits until its answer can be read, with
// one system call fewer than a write then a read: the read that would
// find nothing yet, right after the write, is not made. The read itself
// is left to the caller, so that what it returns (a timeout, the end of
// the connection) is what the ordinary read returns. An error is the
// ordinary write's.
func (c *conn) writeWait(b []byte) error {
	w := c.w
	if w == nil {
		_, err := c.nc.Write(b)
		return err
	}
	w.b, w.n, w.err = b, 0, nil
	// A failed wait (the deadline passed) is met again by the read.
	_ = w.raw.Read(w.write)
	n, err := w.n, w.err
	w.b = nil
	if err != nil {
		return &net.OpError{Op: "write", Net: "tcp", Source: c.nc.LocalAddr(), Addr: c.nc.RemoteAddr(), Err: os.NewSyscallError("write", err)}
	}
	if n < len(b) {
		_, err = c.nc.Write(b[n:])
	}
	return err
}
