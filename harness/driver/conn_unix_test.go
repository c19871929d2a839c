//go:build unix

package driver

import (
	"bufio"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// resetConn is a connection whose peer has reset it (closed without
// lingering): the next write fails.
func resetConn(t *testing.T) *conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	sc.(*net.TCPConn).SetLinger(0)
	sc.Close()
	// Wait until the reset has arrived: a read then fails.
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after the reset succeeded")
	}
	nc.SetReadDeadline(time.Time{})
	raw, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return &conn{nc: nc, br: bufio.NewReader(nc), peek: newPeeker(raw), w: newWriter(raw)}
}

// A write that fails fails as the ordinary write fails: the recorded
// message is the same either way.
func TestWriteWait_FailsAsTheOrdinaryWrite(t *testing.T) {
	t.Parallel()
	a, b := resetConn(t), resetConn(t)
	_, plain := a.nc.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	waited := b.writeWait([]byte("GET / HTTP/1.1\r\n\r\n"))
	if plain == nil || waited == nil {
		t.Fatalf("writes after a reset: %v and %v, want both to fail", plain, waited)
	}
	strip := func(err error, c *conn) string {
		return strings.NewReplacer(c.nc.LocalAddr().String(), "L", c.nc.RemoteAddr().String(), "R").Replace(err.Error())
	}
	if strip(plain, a) != strip(waited, b) {
		t.Fatalf("writeWait failed with %q, the ordinary write with %q", strip(waited, b), strip(plain, a))
	}
}
