package driver

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// Forwarder sends requests that arrived elsewhere — the client proxy's,
// one intent's attempts — on to one upstream over the driver's own
// connections: the forwarding goroutine writes the request and reads the
// answer itself (http.Transport hands both to two goroutines of the
// connection and back, most of what a relay adds to an attempt), an idle
// connection the upstream closed is found by a peek before it carries a
// request, a plain answer is read without building an http.Response, and
// nothing is ever re-sent behind the caller's back.
type Forwarder struct {
	pool    *pool
	base    string
	targets targets
	scratch sync.Pool
	// closed ends, at Close, the forwards still dialling as well.
	closed context.Context
	close  context.CancelFunc
}

// MaxForwardedBody bounds an answer the Forwarder reads and relays (the
// driver records at most MaxResponseBytes of its own answers): one longer
// is the upstream's error, answered as a gateway.
const MaxForwardedBody = 64 << 20

// NewForwarder forwards to base (scheme://host[:port]), keeping at most
// maxIdle idle connections, each made by dial (nil: a plain dialer).
func NewForwarder(base string, maxIdle int, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Forwarder {
	f := &Forwarder{base: base, targets: targets{m: map[targetKey]target{}}}
	f.closed, f.close = context.WithCancel(context.Background())
	if dial == nil {
		d := net.Dialer{KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	// Only a dial needs the hook: a request on a made connection is
	// interrupted by the pool's close (its deadline moved to the past).
	f.pool = newPool(max(maxIdle, 1), func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(f.closed, cancel)()
		return dial(ctx, network, addr)
	})
	f.scratch.New = func() any { return &scratch{keepWire: true} }
	return f
}

// Answer is the upstream's answer to one forwarded request.
type Answer struct {
	Status int
	// Header is the answer's header as the driver records one (canonical
	// names in order, repeated fields joined, credentials hidden), less
	// the hop-by-hop fields and Content-Length: the length of Body.
	Header     history.Headers
	RetryAfter string // the first Retry-After value, "" for none
	Body       []byte
	// wire is a plain answer's status line and header as they came; full
	// is any other answer's header.
	wire []byte
	full http.Header
}

// Forward sends method uri (the path and query) to the upstream with the
// header fields hdr — in their order, less the hop-by-hop ones; Host is
// the upstream's and Content-Length the body's — and reads the whole
// answer, all within timeout and while ctx lasts.
func (f *Forwarder) Forward(ctx context.Context, method, uri string, hdr history.Headers, body []byte, timeout time.Duration) (Answer, error) {
	t, err := f.targets.get(f.base, uri)
	if err != nil {
		return Answer{}, err
	}
	sent := make(history.Headers, 0, len(hdr))
	for _, h := range hdr {
		if !HopByHop(h.Name) {
			sent = append(sent, h)
		}
	}
	if err := validRequest(method, sent); err != nil {
		return Answer{}, err
	}
	s := f.scratch.Get().(*scratch)
	defer func() {
		s.fullHeader = nil // not kept alive by the pool
		f.scratch.Put(s)
	}()
	ex, err := f.pool.send(ctx, &wireRequest{method: method, t: t, hdr: sent, body: body, maxBody: MaxForwardedBody}, time.Now().Add(timeout), s)
	if err == nil {
		err = ex.bodyErr
	}
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Status: ex.head.status, RetryAfter: ex.head.retryAfter, Body: append([]byte{}, ex.body...)}
	hop := false
	for _, h := range ex.head.header {
		if h.Name != "Content-Length" && !HopByHop(h.Name) {
			a.Header = append(a.Header, h)
		}
		hop = hop || HopByHop(h.Name)
	}
	switch {
	case len(s.wireHead) > 0 && !hop:
		a.wire = append([]byte{}, s.wireHead...)
	case len(s.wireHead) > 0:
		// A plain head with a hop-by-hop field (Keep-Alive, Upgrade…):
		// relayed without it, from the fields as read.
		a.full = http.Header{}
		for _, h := range ex.head.header {
			a.full[h.Name] = []string{h.Value}
		}
	default:
		a.full = s.fullHeader
	}
	return a, nil
}

// AppendWire appends the answer as a relay writes it to its client, for a
// request of method: a plain answer byte for byte as it came, any other
// with its header less the hop-by-hop fields and its body, read whole,
// with a Content-Length (one write, where a chunked relay would take two).
func (a *Answer) AppendWire(dst []byte, method string) []byte {
	if a.wire != nil {
		return append(append(dst, a.wire...), a.Body...)
	}
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(a.Status), 10)
	dst = append(dst, ' ')
	dst = append(dst, http.StatusText(a.Status)...)
	dst = append(dst, "\r\n"...)
	for _, k := range sortedNames(a.full) {
		if k == "Content-Length" || HopByHop(k) {
			continue
		}
		for _, v := range a.full[k] {
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = appendFieldValue(dst, v)
			dst = append(dst, "\r\n"...)
		}
	}
	if method != http.MethodHead && a.Status >= 200 && a.Status != http.StatusNoContent && a.Status != http.StatusNotModified {
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(a.Body)), 10)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	if method == http.MethodHead {
		return dst
	}
	return append(dst, a.Body...)
}

// Close closes the idle connections and interrupts requests in flight,
// dialling ones included.
func (f *Forwarder) Close() {
	f.close()
	f.pool.close()
}

// HopByHop reports a hop-by-hop header field (RFC 9110 §7.6.1): a proxy
// does not forward it.
func HopByHop(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}
