package driver

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/httptoken"
)

// The driver speaks HTTP/1.1 itself, over connections it keeps alive in a
// small pool, rather than through http.Transport. The transport hands every
// request to two goroutines of its connection (a writer and a reader) and
// back, which costs more than the rest of an attempt; here the attempt's own
// goroutine writes the request and reads the answer. It also makes the
// driver's sends exactly its attempts: nothing is ever re-sent behind the
// history's back. Responses are read as net/http reads them: plain ones
// (HTTP/1.1, sized, in the first bytes read) by readHead, held to
// http.ReadResponse's answers by a differential test, and every other one
// (chunked, close-delimited, interim, odd) by http.ReadResponse itself.

// userAgent is what http.Transport sends, kept so that a service sees the
// same client as before.
const userAgent = "Go-http-client/1.1"

// errInvalidRequest marks a request that cannot be written at all (a bad
// method, header or host): nothing was sent, and no retry would fare better.
var errInvalidRequest = errors.New("invalid request")

// target is where a request goes, parsed once per distinct base URL and path.
type target struct {
	https bool
	addr  string // host:port to dial
	host  string // Host header
	uri   string // request-target: path and query, escaped
	// poolKey names the connections that may carry the request.
	poolKey string
}

// parseTarget reads base+path as http.NewRequest would.
func parseTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, err
	}
	var port string
	t := target{uri: u.RequestURI(), host: u.Host}
	switch u.Scheme {
	case "http":
		port = "80"
	case "https":
		port, t.https = "443", true
	default:
		return target{}, fmt.Errorf("%w: unsupported protocol scheme %q", errInvalidRequest, u.Scheme)
	}
	if u.Host == "" {
		return target{}, fmt.Errorf("%w: no host in %q", errInvalidRequest, raw)
	}
	for i := 0; i < len(u.Host); i++ {
		if u.Host[i] >= 0x80 || u.Host[i] <= ' ' {
			return target{}, fmt.Errorf("%w: host %q is not ASCII (give its punycode form)", errInvalidRequest, u.Host)
		}
	}
	if p := u.Port(); p != "" {
		port = p
	}
	t.addr = net.JoinHostPort(u.Hostname(), port)
	t.poolKey = u.Scheme + "://" + t.addr
	return t, nil
}

// targets caches parsed targets: a run sends few distinct URLs many times.
type targets struct {
	mu sync.RWMutex
	m  map[targetKey]target
}

// targetKey is a base URL and a path, kept apart so that a lookup needs
// no concatenation.
type targetKey struct{ base, path string }

func (ts *targets) get(base, path string) (target, error) {
	k := targetKey{base, path}
	ts.mu.RLock()
	t, ok := ts.m[k]
	ts.mu.RUnlock()
	if ok {
		return t, nil
	}
	t, err := parseTarget(strings.TrimRight(base, "/") + path)
	if err != nil {
		return t, err
	}
	ts.mu.Lock()
	// Bounded: paths rendered per attempt (ids in them) would grow it.
	if len(ts.m) < 1024 {
		ts.m[k] = t
	}
	ts.mu.Unlock()
	return t, nil
}

// conn is one HTTP/1.1 connection.
type conn struct {
	// req is handed to http.ReadResponse (which reads only its method),
	// reused across the connection's requests.
	req http.Request
	nc  net.Conn
	// peek looks at the TCP connection underneath for liveness; w writes
	// requests on it when it is plain TCP (nil under TLS).
	peek *peeker
	w    *writer
	br   *bufio.Reader
	// head counts what br reads from nc while a response's header is
	// read by http.ReadResponse, which has no bound of its own.
	head headCap
	key  string
	tls  bool
	// dialed is when the connection was made (see Config.Upstream).
	dialed time.Time
}

// MaxHeaderBytes bounds a response's status line and header fields, as
// MaxResponseBytes bounds its body: 100 MB of headers used to be recorded
// whole, on a history line the reader then refused. Go's own server takes
// the same 1 MiB by default (http.DefaultMaxHeaderBytes).
const MaxHeaderBytes = 1 << 20

// errHeaderTooLong says a response's header passed MaxHeaderBytes.
var errHeaderTooLong = fmt.Errorf("response header longer than %d bytes", MaxHeaderBytes)

// headCap is a reader that, armed, refuses to read past its budget.
type headCap struct {
	r     io.Reader
	armed bool
	left  int
}

func (h *headCap) Read(p []byte) (int, error) {
	if !h.armed {
		return h.r.Read(p)
	}
	if h.left <= 0 {
		return 0, errHeaderTooLong
	}
	if len(p) > h.left {
		p = p[:h.left]
	}
	n, err := h.r.Read(p)
	h.left -= n
	return n, err
}

// pool keeps idle connections per scheme and address, as http.Transport
// would, without a goroutine per connection. It also knows the connections
// lent to requests in flight, so that the run's end can interrupt them all
// at once (rather than every request watching the run's context).
type pool struct {
	mu   sync.Mutex
	idle map[string][]*conn
	busy map[*conn]struct{}
	// closed says the run is over: nothing more is lent or kept.
	closed  bool
	maxIdle int
	dialer  net.Dialer
	// through, when set, makes every connection instead of dialer
	// ([Config.Dial]).
	through func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newPool(maxIdle int, through func(ctx context.Context, network, addr string) (net.Conn, error)) *pool {
	return &pool{idle: map[string][]*conn{}, busy: map[*conn]struct{}{}, maxIdle: maxIdle,
		dialer: net.Dialer{KeepAlive: 30 * time.Second}, through: through}
}

// get returns a live idle connection to t, or nil. A connection the server
// closed while it sat idle (or wrote to unasked) is dropped here rather than
// met by the next request: that request would be recorded as indeterminate
// though it never reached the service.
func (p *pool) get(key string) *conn {
	for {
		p.mu.Lock()
		l := p.idle[key]
		if len(l) == 0 {
			p.mu.Unlock()
			return nil
		}
		c := l[len(l)-1]
		p.idle[key] = l[:len(l)-1]
		p.mu.Unlock()
		if c.br.Buffered() == 0 && c.peek.alive(c.tls) {
			return c
		}
		c.nc.Close()
	}
}

// lend marks c as carrying a request, unless the run is over.
func (p *pool) lend(c *conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.busy[c] = struct{}{}
	return true
}

// settle takes c back from its request: kept for the next one when keep
// is set, the run goes on and there is room, closed otherwise.
func (p *pool) settle(c *conn, keep bool) {
	p.mu.Lock()
	delete(p.busy, c)
	if keep && !p.closed && len(p.idle[c.key]) < p.maxIdle {
		p.idle[c.key] = append(p.idle[c.key], c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	c.nc.Close()
}

// close ends the run: idle connections are closed, and requests in flight
// are interrupted (their deadline moves to the past; their connections are
// closed when settled).
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for k, l := range p.idle {
		for _, c := range l {
			c.nc.Close()
		}
		delete(p.idle, k)
	}
	for c := range p.busy {
		_ = c.nc.SetDeadline(time.Unix(1, 0))
	}
}

// dial opens a new connection to t, finished (TLS handshake included) by
// deadline or when ctx ends.
func (p *pool) dial(ctx context.Context, t target, deadline time.Time) (*conn, error) {
	var nc net.Conn
	var err error
	if p.through != nil {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		nc, err = p.through(dctx, "tcp", t.addr)
		cancel()
	} else {
		d := p.dialer
		d.Deadline = deadline
		nc, err = d.DialContext(ctx, "tcp", t.addr)
	}
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, key: t.poolKey, dialed: time.Now()}
	if sc, ok := nc.(syscall.Conn); ok {
		raw, err := sc.SyscallConn()
		if err != nil {
			nc.Close()
			return nil, err
		}
		c.peek, c.w = newPeeker(raw), newWriter(raw)
	}
	if t.https {
		host, _, _ := net.SplitHostPort(t.addr)
		tc := tls.Client(nc, &tls.Config{ServerName: host})
		hctx, cancel := context.WithDeadline(ctx, deadline)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, err
		}
		c.nc, c.tls, c.w = tc, true, nil
	}
	c.head.r = c.nc
	c.br = bufio.NewReaderSize(&c.head, 4<<10)
	return c, nil
}

// exchange is one request written and its answer read.
type exchange struct {
	// gotConn says a connection was had, so the request may have left.
	gotConn bool
	// local, remote and dialed are the connection's ends and when it was
	// made, once gotConn.
	local, remote string
	dialed        time.Time
	// gotHead says the status and header arrived; bodyErr is then set
	// when the whole body did not.
	gotHead bool
	head    head
	body    []byte
	bodyErr error
}

// wireRequest is a request ready to be written.
type wireRequest struct {
	method string
	t      target
	hdr    history.Headers
	body   []byte
	fresh  bool // its own connection, closed afterwards
	// maxBody bounds the answer's body (0: MaxResponseBytes).
	maxBody int64
	// hold, when set, is called once all but the request's last byte is
	// written, with the write of that byte; it returns that write's error.
	hold func(last func() error) error
}

// send writes rq on a kept-alive (or, when fresh, a new) connection and
// reads its answer, all before deadline and while ctx lasts. An error
// before the response's header means no answer; the caller tells whether
// anything left. The request is written from s.out, and a plain answer's
// header and body are read into s.got and s.body.
func (p *pool) send(ctx context.Context, rq *wireRequest, deadline time.Time, s *scratch) (exchange, error) {
	var ex exchange
	var c *conn
	if !rq.fresh {
		c = p.get(rq.t.poolKey)
	}
	if c == nil {
		var err error
		if c, err = p.dial(ctx, rq.t, deadline); err != nil {
			return ex, err
		}
	}
	// The deadline is set before the connection is lent, so that the
	// run's end (which moves it to the past) always comes after it.
	if err := c.nc.SetDeadline(deadline); err != nil {
		c.nc.Close()
		return ex, err
	}
	if !p.lend(c) {
		c.nc.Close()
		return ex, errRunOver
	}
	ex.gotConn = true
	ex.local, ex.remote, ex.dialed = c.nc.LocalAddr().String(), c.nc.RemoteAddr().String(), c.dialed
	keep := false
	defer func() { p.settle(c, keep) }()
	s.out = appendRequest(s.out[:0], rq)
	if rq.hold != nil {
		// Held copies write their last bytes from the gate, one after
		// another: a plain write, not writeWait, which would wait there
		// for this copy's answer before the next copy's byte went out.
		out, n := s.out, len(s.out)-1
		if _, err := c.nc.Write(out[:n]); err != nil {
			return ex, err
		}
		if err := rq.hold(func() error { _, err := c.nc.Write(out[n:]); return err }); err != nil {
			return ex, err
		}
	} else if err := c.writeWait(s.out); err != nil {
		return ex, err
	}
	// Wait for the answer's first bytes, failing as http.ReadResponse
	// fails on its first line.
	if _, err := c.br.Peek(1); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return ex, err
	}
	var buffered []byte
	if s.keepWire {
		buffered, _ = c.br.Peek(c.br.Buffered())
	}
	if h, ok := readHead(c.br, rq.method, s.got[:0], rq.bodyLimit()); ok {
		s.got = h.header
		if s.keepWire {
			// What readHead consumed is still in br's buffer: it read
			// from what was buffered, and the body's read has not refilled it.
			s.wireHead = append(s.wireHead[:0], buffered[:len(buffered)-c.br.Buffered()]...)
		}
		ex.gotHead, ex.head = true, h
		if int64(cap(s.body)) < h.length {
			s.body = make([]byte, h.length)
		}
		ex.body = s.body[:h.length:h.length]
		if ex.body == nil {
			// Never nil: an empty body is recorded as one.
			ex.body = []byte{}
		}
		if _, err := io.ReadFull(c.br, ex.body); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			ex.body, ex.bodyErr = nil, err
			return ex, nil
		}
		keep = !rq.fresh
		return ex, nil
	}
	c.req.Method = rq.method
	// What br holds already came in under the bound of its size; the
	// rest of the header may take MaxHeaderBytes more, then the body is
	// read under MaxResponseBytes.
	c.head.armed, c.head.left = true, MaxHeaderBytes
	resp, err := readResponse(c.br, &c.req)
	c.head.armed = false
	if err != nil {
		if errors.Is(err, errHeaderTooLong) {
			return ex, errHeaderTooLong
		}
		return ex, err
	}
	ex.gotHead = true
	ex.head = head{status: resp.StatusCode, header: headersOf(resp.Header), retryAfter: resp.Header.Get("Retry-After"),
		length: resp.ContentLength}
	if s.keepWire {
		s.wireHead, s.fullHeader = s.wireHead[:0], resp.Header
	}
	ex.body, ex.bodyErr = readBody(resp, rq.bodyLimit())
	if ex.bodyErr == nil && !rq.fresh && !resp.Close && resp.StatusCode != http.StatusSwitchingProtocols &&
		(resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0) {
		keep = true
	}
	return ex, nil
}

// readResponse reads the final answer, skipping interim 1xx ones as
// http.Transport does.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}
}

// readBody reads up to limit bytes of the body. A body longer than
// that is an error too: the connection cannot be reused, and the record
// would not be the answer.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength == 0 || resp.Body == http.NoBody {
		return []byte{}, nil
	}
	if n := resp.ContentLength; n > 0 && n <= limit {
		b := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return b[:limit], fmt.Errorf("%w than %d bytes", errBodyTooLong, limit)
	}
	return b, nil
}

// bodyLimit is the most of an answer's body rq reads.
func (rq *wireRequest) bodyLimit() int64 {
	if rq.maxBody > 0 {
		return rq.maxBody
	}
	return MaxResponseBytes
}

// errRunOver says a request was not sent because the run had ended.
var errRunOver = errors.New("the run ended")

// errBodyTooLong says the body was cut at its bound.
var errBodyTooLong = errors.New("longer")

// excluded are the header fields http.Request.Write leaves out of a
// request's header map (it writes its own, or none).
func excluded(name string) bool {
	switch name {
	case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
		return true
	}
	return false
}

// appendRequest appends rq as written by http.Transport on HTTP/1.1 without
// compression: request line, Host, User-Agent, Content-Length, the header
// fields in name order, then the body.
func appendRequest(dst []byte, rq *wireRequest) []byte {
	dst = append(dst, rq.method...)
	dst = append(dst, ' ')
	dst = append(dst, rq.t.uri...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, rq.t.host...)
	ua := userAgent
	if v, ok := rq.hdr.Get("User-Agent"); ok {
		ua = v
	}
	if ua != "" {
		dst = append(dst, "\r\nUser-Agent: "...)
		dst = appendFieldValue(dst, ua)
	}
	// As http.Transport: a length for every body, and for an empty one
	// unless the method is GET or HEAD.
	if len(rq.body) > 0 || rq.method != "GET" && rq.method != "HEAD" {
		dst = append(dst, "\r\nContent-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(rq.body)), 10)
	}
	dst = append(dst, "\r\n"...)
	for _, f := range rq.hdr {
		if excluded(f.Name) {
			continue
		}
		dst = append(dst, f.Name...)
		dst = append(dst, ": "...)
		dst = appendFieldValue(dst, f.Value)
		dst = append(dst, "\r\n"...)
	}
	if rq.fresh {
		if _, ok := rq.hdr.Get("Connection"); !ok {
			dst = append(dst, "Connection: close\r\n"...)
		}
	}
	dst = append(dst, "\r\n"...)
	return append(dst, rq.body...)
}

// appendFieldValue appends v with outer ASCII whitespace trimmed, as
// net/http writes header values (line breaks were refused before).
func appendFieldValue(dst []byte, v string) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return append(dst, v...)
}

// validRequest checks what http.Transport checks before it sends: the
// method is a token, header names are tokens and values hold no control
// characters.
func validRequest(method string, h history.Headers) error {
	if !httptoken.Valid(method) {
		return fmt.Errorf("%w: method %q", errInvalidRequest, method)
	}
	for _, f := range h {
		if !httptoken.Valid(f.Name) {
			return fmt.Errorf("%w: header field name %q", errInvalidRequest, f.Name)
		}
		for i := 0; i < len(f.Value); i++ {
			if c := f.Value[i]; c < ' ' && c != '\t' || c == 0x7f {
				return fmt.Errorf("%w: header field value for %q", errInvalidRequest, f.Name)
			}
		}
	}
	return nil
}
