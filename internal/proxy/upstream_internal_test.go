package proxy

import (
	"net"
	"testing"
	"time"
)

// closedConn is a TCP connection already closed: the kernel can no longer
// be asked about it, so what the watcher saw last decides.
func closedConn(t *testing.T) *net.TCPConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	return c.(*net.TCPConn)
}

// A request counts as never taken only when it was seen waiting
// unacknowledged for untakenAfter; a connection the service acknowledged,
// or whose data was seen unacknowledged for a moment only (the answer may
// have closed it right after), is not the proxy's to blame.
func TestUpstreams_UntakenOnlyAfterAWait(t *testing.T) {
	type look struct {
		sent, taken bool
		at          time.Duration
	}
	t0 := time.Now()
	for name, tc := range map[string]struct {
		looks []look
		want  string
	}{
		"waited":        {looks: []look{{true, false, 0}, {true, false, 60 * time.Millisecond}}, want: untaken},
		"a moment only": {looks: []look{{true, false, 0}, {true, false, 10 * time.Millisecond}}},
		"then taken":    {looks: []look{{true, false, 0}, {true, false, 60 * time.Millisecond}, {true, true, 61 * time.Millisecond}}},
		"nothing sent":  {looks: []look{{false, false, 0}, {false, false, time.Second}}},
		"taken at once": {looks: []look{{true, true, 0}}},
	} {
		t.Run(name, func(t *testing.T) {
			u, c := newUpstreams(), closedConn(t)
			u.set("client", dialState{proxy: "proxy", linked: true, conn: c})
			for _, l := range tc.looks {
				if !u.saw("client", c, l.sent, l.taken, t0.Add(l.at)) {
					t.Fatal("saw: client not on its connection")
				}
			}
			if got := u.reason("client", "proxy"); got != tc.want {
				t.Errorf("reason %q, want %q", got, tc.want)
			}
			if got := u.reason("client", "another proxy"); got != "" {
				t.Errorf("another proxy's client: %q", got)
			}
		})
	}
}
