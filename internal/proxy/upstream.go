package proxy

import (
	"bytes"
	"encoding/json"
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

// upstreamLog learns from the in-process Toxiproxy's log, the only place
// the library reports it, whether each accepted client was connected
// upstream. Toxiproxy accepts and dials upstream in one loop per proxy, so
// after "Accepted client" the next "Setup connection" of the same proxy (or
// "Unable to open connection to upstream") concludes that client.
type upstreamLog struct {
	mu sync.Mutex
	// listens maps a proxy's listen address to its name.
	listens map[string]string
	// pending is, per proxy name, the client whose upstream dial has not
	// concluded, and when it was accepted.
	pending map[string]pendingDial
	// failed maps a client address to its dial error.
	failed map[string]string
	// linked and older hold clients connected upstream, in two generations
	// so that the memory stays bounded over a long run; a client concluded
	// before forgetBefore may have been forgotten.
	linked, older map[string]bool
	rotated       time.Time // when older became older
	forgetBefore  time.Time
}

// pendingDial is a client accepted by a proxy whose upstream dial is open.
type pendingDial struct {
	client string
	since  time.Time
}

// generation bounds each generation of upstreamLog's client sets.
const generation = 1 << 14

func newUpstreamLog() *upstreamLog {
	return &upstreamLog{listens: map[string]string{}, pending: map[string]pendingDial{},
		failed: map[string]string{}, linked: map[string]bool{}, older: map[string]bool{}}
}

// logEvent is the part of a Toxiproxy log line upstreamLog reads.
type logEvent struct {
	Name    string `json:"name"`
	Client  string `json:"client"`
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Write implements io.Writer for zerolog: one JSON event per call.
func (u *upstreamLog) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte("Accepted client")) && !bytes.Contains(p, []byte("Setup connection")) &&
		!bytes.Contains(p, []byte("Unable to open connection to upstream")) {
		return len(p), nil
	}
	var e logEvent
	if json.Unmarshal(p, &e) != nil {
		return len(p), nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	switch e.Message {
	case "Accepted client":
		u.conclude(e.Name)
		u.pending[e.Name] = pendingDial{client: e.Client, since: time.Now()}
	case "Setup connection":
		u.conclude(e.Name)
	case "Unable to open connection to upstream":
		if len(u.failed) >= generation {
			clear(u.failed)
		}
		u.failed[e.Client] = e.Error
		delete(u.pending, e.Name)
	}
	return len(p), nil
}

// conclude records the pending client of proxy name, if any, as linked.
func (u *upstreamLog) conclude(name string) {
	d, ok := u.pending[name]
	if !ok {
		return
	}
	delete(u.pending, name)
	if len(u.linked) >= generation {
		// What older held is dropped: it was concluded before the
		// previous rotation.
		u.older, u.linked = u.linked, u.older
		clear(u.linked)
		u.forgetBefore, u.rotated = u.rotated, time.Now()
	}
	u.linked[d.client] = true
}

// listening records that proxy name listens on addr.
func (u *upstreamLog) listening(name, addr string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.listens[addr] = name
}

// Upstream implements [UpstreamReporter].
func (u *upstreamLog) Upstream(local, remote string, dialed time.Time) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	name, ok := u.listens[remote]
	if !ok {
		return "" // not one of this server's proxies
	}
	if err, ok := u.failed[local]; ok {
		delete(u.failed, local)
		return err
	}
	if u.linked[local] || u.older[local] {
		return ""
	}
	d, ok := u.pending[name]
	switch {
	case ok && d.client == local:
		return "the proxy's connect to the service was still pending"
	case ok && dialed.After(u.forgetBefore):
		// Accepts and dials are one loop: a connection not yet seen (and
		// too recent to have been forgotten) waits in the proxy's backlog
		// behind the pending dial.
		return "the proxy had not accepted it yet: it was still waiting on a connect to the service"
	}
	return ""
}
