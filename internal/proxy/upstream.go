package proxy

import (
	"net"
	"sync"
	"time"
)

// UpstreamReporter is implemented by a [Server] that can tell what became
// of the upstream side of a client's connection. Behind a proxy, a service
// that refuses connections, or whose listen backlog is full, is seen by the
// client as a connection that was taken and then closed or left silent:
// only the proxy knows it never reached the service. The in-process server
// implements it; an external toxiproxy-server does not.
type UpstreamReporter interface {
	// Upstream says why the proxy listening on remote did not connect the
	// client connection local (both as the client sees them, ip:port),
	// dialled at dialed, to the service: "" when it did or when it cannot
	// tell, else a reason such as "connect: connection refused" or "the
	// proxy's connect to the service was still pending".
	Upstream(local, remote string, dialed time.Time) string
}

// upstreams is what became of each client's upstream connect, per client
// address (ip:port, as the client sees its side). It is kept in two
// generations so that its memory stays bounded over a long run: a client
// may be forgotten once a generation's worth of clients came after it.
type upstreams struct {
	mu       sync.Mutex
	cur, old map[string]dialState
}

// dialState is one client's upstream connect.
type dialState struct {
	// proxy is the listen address the client connected to.
	proxy string
	// err says why the connect failed ("" while it is pending, or once it
	// succeeded).
	err    string
	linked bool
	// conn is the connection upstream once linked; taken says the
	// service's kernel acknowledged data on it (it took the connection);
	// waiting is when data was first seen sent and not acknowledged, and
	// looked the last time it was still so.
	conn            *net.TCPConn
	taken           bool
	waiting, looked time.Time
}

// untakenAfter is how long data must have waited unacknowledged for the
// connection to count as not taken: on loopback an acknowledgement takes
// microseconds, so a shorter wait says nothing (the last look may predate
// an answer that closed the connection).
const untakenAfter = 50 * time.Millisecond

// untaken is the reason for a connection the proxy made whose data the
// service's kernel never acknowledged.
const untaken = "the service never took the connection: its kernel acknowledged none of the request, as when its listen backlog is full"

// generation bounds each generation of upstreams.
const generation = 1 << 14

func newUpstreams() *upstreams {
	return &upstreams{cur: map[string]dialState{}, old: map[string]dialState{}}
}

// set records client's state; a client address seen again (its port
// reused) is a new connection.
func (u *upstreams) set(client string, s dialState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.cur[client]; !ok && len(u.cur) >= generation {
		u.old, u.cur = u.cur, make(map[string]dialState, generation)
	}
	u.cur[client] = s
	delete(u.old, client)
}

// saw records what watch saw of client's connection c at now: data sent,
// and whether the service took it. It reports false when client is no
// longer on c (forgotten, or its port reused), so that watch stops.
func (u *upstreams) saw(client string, c *net.TCPConn, sent, taken bool, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, m := range []map[string]dialState{u.cur, u.old} {
		if s, ok := m[client]; ok && s.conn == c {
			s.look(sent, taken, now)
			m[client] = s
			return true
		}
	}
	return false
}

// look records one look at the connection.
func (s *dialState) look(sent, taken bool, now time.Time) {
	switch {
	case taken:
		s.taken = true
	case sent:
		if s.waiting.IsZero() {
			s.waiting = now
		}
		s.looked = now
	}
}

// reason is [UpstreamReporter.Upstream] for the client local of the proxy
// listening on remote.
func (u *upstreams) reason(local, remote string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	s, ok := u.cur[local]
	if !ok {
		s, ok = u.old[local]
	}
	switch {
	case !ok || s.proxy != remote:
		return "" // not one of this server's clients, or forgotten
	case s.err != "":
		return s.err
	case !s.linked:
		return "the proxy's connect to the service was still pending"
	case s.taken || s.conn == nil:
		return ""
	}
	// Look again if it is still open: the last look may be a moment old.
	if sent, acked, ok := sentAcked(s.conn); ok {
		s.look(sent > 0, acked > 1, time.Now())
	}
	if !s.taken && !s.waiting.IsZero() && s.looked.Sub(s.waiting) >= untakenAfter {
		return untaken
	}
	return ""
}
