package broker_test

import (
	"errors"
	"io"
	"net"
	"testing"

	"github.com/idemchaos/idemchaos/harness/broker"
)

// A hop's plumbing: connections are served until cut, the hook decides
// what goes on, and Close ends the listeners, the connections and the
// goroutines serving them, once or twice.
func TestLinks_ServeCutHookClose(t *testing.T) {
	var l broker.Links
	if !l.Pass(broker.Ack{Seq: 1}) {
		t.Fatal("no hook: an ack must go on")
	}
	l.SetHook(func(a broker.Ack) bool { return a.Seq != 2 })
	if l.Pass(broker.Ack{Seq: 2}) || !l.Pass(broker.Ack{Seq: 3}) {
		t.Fatal("the hook's answer was not taken")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{}, 1)
	l.Serve(ln, func(c net.Conn) {
		l.Track(c, true)
		defer l.Track(c, false)
		served <- struct{}{}
		_, _ = io.Copy(io.Discard, c) // until the hop cuts it
		_ = c.Close()
	})
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-served
	l.Cut()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("after Cut the consumer's read gave %v, want EOF", err)
	}
	l.Close()
	l.Close()
	select {
	case <-l.Done():
	default:
		t.Fatal("Done is open after Close")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener still accepts after Close")
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Serve(ln2, func(net.Conn) { t.Error("a closed Links served a connection") })
	if _, err := net.Dial("tcp", ln2.Addr().String()); err == nil {
		t.Fatal("a listener handed to a closed Links still accepts")
	}
}
