package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
)

// connectTimeout bounds a proxy's connect to its upstream, as a real load
// balancer's does (Envoy's default, HAProxy's usual setting: 5s). Without
// it a connect to a full listen backlog waits on the kernel's SYN retries
// for two minutes, and a client that gave up long ago has its request
// delivered to the service then.
const connectTimeout = 5 * time.Second

// front is one in-process proxy: its listener and accept loop, and the
// Toxiproxy proxy whose toxic collection every connection pair runs
// through. It accepts every client at once and connects each upstream on
// a goroutine of its own, so that connects waiting on a full backlog hold
// up no other client (Toxiproxy's own loop dials inside the accept loop).
type front struct {
	api      *toxiproxy.ApiServer
	p        *toxiproxy.Proxy
	up       *upstreams
	upstream string
	timeout  time.Duration

	mu     sync.Mutex
	listen string // as asked, then as bound (a restart binds it again)
	ln     net.Listener
	cancel context.CancelFunc // ends the current start's accept loop and connects
	// conns are the connections of the current start, closed by stop;
	// closed ones are dropped when the map has doubled (pruneAt).
	conns   map[net.Conn]struct{}
	pruneAt int
	// running counts the accept loop and the connects in flight.
	running sync.WaitGroup
}

func newFront(api *toxiproxy.ApiServer, name, listen, upstream string, up *upstreams, timeout time.Duration) *front {
	return &front{api: api, p: toxiproxy.NewProxy(api, name, listen, upstream), up: up,
		upstream: upstream, timeout: timeout, listen: listen, conns: map[net.Conn]struct{}{}}
}

// addr is where the proxy listens.
func (f *front) addr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listen
}

// start listens and accepts; a started proxy is left as it is.
func (f *front) start() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", f.listen, err)
	}
	f.ln, f.listen = ln, ln.Addr().String()
	f.p.Lock()
	f.p.Listen = f.listen // the links' metric labels read it
	f.p.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.running.Add(1)
	go f.accept(ctx, ln)
	return nil
}

// stop closes the listener and every connection, pending connects
// included, and returns once none is left running.
func (f *front) stop() {
	f.mu.Lock()
	if f.ln == nil {
		f.mu.Unlock()
		return
	}
	f.cancel()
	_ = f.ln.Close()
	f.ln = nil
	conns := f.conns
	f.conns, f.pruneAt = map[net.Conn]struct{}{}, 0
	f.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	f.running.Wait()
}

// accept takes every client as soon as it arrives.
func (f *front) accept(ctx context.Context, ln net.Listener) {
	defer f.running.Done()
	at := ln.Addr().String()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or the like: back off as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		backoff = 0
		client := c.RemoteAddr().String()
		if !f.track(ctx, c) {
			_ = c.Close()
			return
		}
		f.up.set(client, dialState{proxy: at})
		f.running.Add(1)
		go f.connect(ctx, c, client, at)
	}
}

// connect connects one client upstream, then hands the pair to
// Toxiproxy's links, named as Toxiproxy names them.
func (f *front) connect(ctx context.Context, client net.Conn, name, at string) {
	defer f.running.Done()
	d := net.Dialer{Timeout: f.timeout}
	upstream, err := d.DialContext(ctx, "tcp", f.upstream)
	if err != nil {
		why := err.Error()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			why = fmt.Sprintf("the proxy's connect to the service timed out after %s", f.timeout)
		}
		f.up.set(name, dialState{proxy: at, err: why})
		_ = client.Close()
		return
	}
	if !f.track(ctx, upstream) {
		_ = upstream.Close()
		_ = client.Close()
		return
	}
	tc, _ := upstream.(*net.TCPConn)
	f.up.set(name, dialState{proxy: at, linked: true, conn: tc})
	f.p.Toxics.StartLink(f.api, name+"upstream", client, upstream, stream.Upstream)
	f.p.Toxics.StartLink(f.api, name+"downstream", upstream, client, stream.Downstream)
	if tc != nil {
		f.watch(ctx, tc, name)
	}
}

// watchIdle and watchSent bound the wait between two looks at a connection
// the service has not taken yet, before and after data was sent on it: the
// proxy's last look decides once the connection is closed, so it is kept
// fresh while a request waits.
const (
	watchIdle = 50 * time.Millisecond
	watchSent = 5 * time.Millisecond
)

// watch follows a connection made upstream until the service's kernel has
// acknowledged a byte of data on it, or it ends. A connect to a listen
// backlog that overflowed completes on the proxy's side — the service's
// kernel answered the SYN, then dropped the handshake's last ACK — while
// the service never takes the connection, and the request sent on it is
// never acknowledged: only the kernel's counts (TCP_INFO) tell that
// connection from one the service took and did not answer.
func (f *front) watch(ctx context.Context, c *net.TCPConn, client string) {
	wait := time.Millisecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		sent, acked, ok := sentAcked(c)
		if !ok {
			return // closed
		}
		taken := acked > 1
		if !f.up.saw(client, c, sent > 0, taken, time.Now()) || taken {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wait = min(2*wait, watchIdle)
		if sent > 0 {
			wait = min(wait, watchSent)
		}
		t.Reset(wait)
	}
}

// track adds c to the connections stop closes, unless the start it belongs
// to (ctx) has been stopped.
func (f *front) track(ctx context.Context, c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	if len(f.conns) >= f.pruneAt {
		// Toxiproxy's links close both ends when an exchange ends; what
		// they closed need not be closed again.
		for c := range f.conns {
			if isClosed(c) {
				delete(f.conns, c)
			}
		}
		f.pruneAt = max(64, 2*len(f.conns))
	}
	f.conns[c] = struct{}{}
	return true
}

// isClosed says whether c has been closed: its descriptor can no longer be
// reached.
func isClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	return rc.Control(func(uintptr) {}) != nil
}
