package recorder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/clientpath"
)

// DefaultRedact are the headers (and body fields) redacted by default:
// credentials have no place in a history that gets attached to bug reports.
var DefaultRedact = []string{"Authorization", "Cookie", "Set-Cookie"}

// MaxBody caps a recorded request or response body; larger requests are
// refused (413) before they reach the upstream.
const MaxBody = 16 << 20

// Options configure [New].
type Options struct {
	// Upstream is the service's base URL; the request's path is appended.
	Upstream *url.URL
	// Host is the Host header sent upstream (default Upstream.Host): when
	// Upstream names the checked address a host name resolved to, Host
	// keeps the name the service expects.
	Host string
	// KeyHeader is the idempotency-key header (default Idempotency-Key).
	KeyHeader string
	// Tenant names the tenant of a request, given its body (default
	// [DefaultTenant]; [ScenarioTenant] reads it as a scenario sends it).
	Tenant func(req *http.Request, body []byte) string
	// Redact names headers, and JSON or form body fields, whose values are
	// replaced by "[redacted]" in the history (case-insensitive; default
	// [DefaultRedact]). The client and upstream see the real values.
	Redact []string
	// Timeout bounds one upstream exchange (default 30s).
	Timeout time.Duration
	// Scenario names the recording in the history's meta line.
	Scenario string
	// Contract, when set, is written in the meta line: check then judges
	// the recording by it (see [ScenarioContract]).
	Contract *history.Contract
	// Transport sends to the upstream (default: a dedicated transport
	// dialling through Dial).
	Transport http.RoundTripper
	// Dial makes the default transport's connections (the command passes
	// its address gate); nil dials directly.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// IntentHeader, when set, names the request header whose value is the
	// intent of each attempt (the recorded test suite sets it per user
	// action): attempts are numbered per intent, the history is a client
	// history (meta mode "client", judged by the client invariants), and
	// the header is not forwarded upstream. Empty: each key its own
	// intent, as before.
	IntentHeader string
	// Faults are client-path faults applied to the attempts of each
	// intent (see [NewAim]); they need IntentHeader.
	Faults []Aim
	// Seed picks the intents a fraction of faults hits.
	Seed int64
	_    struct{}
}

// Recorder is the proxy: an [http.Handler] that records as it forwards.
type Recorder struct {
	opts    Options
	w       *history.Writer
	start   time.Time
	ops     atomic.Int64
	mu      sync.Mutex
	clients map[string]int
	redact  map[string]bool
	client  *http.Client
	// Counts are the attempts whose outcome is in the history, by outcome;
	// forwarded counts the requests sent upstream.
	ok, info, fail, forwarded atomic.Int64

	// wmu serialises [Recorder.commit]: one event written and flushed at a
	// time, so a flush that succeeded put exactly that event's whole line
	// in the file, and one that failed left no other event half-written.
	wmu      sync.Mutex
	failOnce sync.Once
	failed   chan struct{}
	failErr  error

	// intents numbers the attempts of each intent and the intents in
	// order of first appearance (IntentHeader).
	imu     sync.Mutex
	intents map[string]*intentState
	// done is closed when the recorder is shutting down: a stalled
	// attempt lets go.
	done     chan struct{}
	doneOnce sync.Once
	// serving counts the requests being handled: a fault's hijacked
	// connection is not the server's to wait for, so the recorder waits.
	serving sync.WaitGroup
}

// intentState is one intent's count of attempts and its place in order
// of first appearance.
type intentState struct {
	index, attempts int
}

// New writes the meta line to w and returns the proxy.
func New(w *history.Writer, opts Options) (*Recorder, error) {
	if opts.Upstream == nil || opts.Upstream.Host == "" {
		return nil, errors.New("recorder: an upstream URL with a host is required")
	}
	if opts.KeyHeader == "" {
		opts.KeyHeader = "Idempotency-Key"
	}
	if opts.Tenant == nil {
		opts.Tenant = DefaultTenant
	}
	if opts.Redact == nil {
		opts.Redact = DefaultRedact
	}
	if len(opts.Faults) > 0 && opts.IntentHeader == "" {
		return nil, errors.New("recorder: faults need an intent header: a fault is aimed at attempts of an intent")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Transport == nil {
		dial := (&net.Dialer{Timeout: 5 * time.Second}).DialContext
		if opts.Dial != nil {
			through := opts.Dial
			dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				return through(ctx, network, addr)
			}
		}
		opts.Transport = &http.Transport{
			Proxy:               nil, // never through an environment proxy: the upstream is what was asked
			DialContext:         dial,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		}
	}
	r := &Recorder{opts: opts, w: w, start: time.Now(), clients: map[string]int{}, redact: map[string]bool{}, failed: make(chan struct{}),
		intents: map[string]*intentState{}, done: make(chan struct{}),
		client: &http.Client{Transport: opts.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	for _, n := range opts.Redact {
		r.redact[strings.ToLower(n)] = true
	}
	meta := &history.Event{Type: history.TypeMeta, V: history.Version, Scenario: opts.Scenario,
		Started: r.start.UTC().Format(time.RFC3339Nano), Contract: opts.Contract}
	if opts.IntentHeader != "" {
		// The client's own traffic, with its intents: the client suite
		// judges it (its contract the default, as for a client scenario
		// that declares none).
		meta.Mode = history.ModeClient
	}
	err := r.commit(meta)
	return r, err
}

// commit writes e to the history and flushes it: nil means e's line is
// whole in the file. The first error stops the recorder ([Recorder.Failed]):
// a history that cannot be written is not a recording, and traffic it
// cannot record must not reach the upstream.
//
// A write (syscall) per event: a proxied request costs a round trip to the
// upstream, which dwarfs it, and nothing recorded waits in a buffer to be
// lost.
func (r *Recorder) commit(e *history.Event) error {
	r.wmu.Lock()
	err := r.w.Write(e)
	if err == nil {
		err = r.w.Flush()
	}
	r.wmu.Unlock()
	if err != nil {
		r.failOnce.Do(func() {
			r.failErr = err
			close(r.failed)
		})
	}
	return err
}

// Close lets go of attempts held by a stall: the recording is ending.
func (r *Recorder) Close() { r.doneOnce.Do(func() { close(r.done) }) }

// Wait waits until every request being handled is recorded (after
// [Recorder.Close] and the server's shutdown), or ctx ends.
func (r *Recorder) Wait(ctx context.Context) {
	idle := make(chan struct{})
	go func() { r.serving.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// attempt numbers one more attempt of intent: its number (from 1) and
// the intent's place in order of first appearance (from 0).
func (r *Recorder) attempt(intent string) (n, index int) {
	r.imu.Lock()
	defer r.imu.Unlock()
	st, ok := r.intents[intent]
	if !ok {
		st = &intentState{index: len(r.intents)}
		r.intents[intent] = st
	}
	st.attempts++
	return st.attempts, st.index
}

// Failed is closed when a write to the history failed; [Recorder.Err]
// says why. The recorder then forwards nothing more.
func (r *Recorder) Failed() <-chan struct{} { return r.failed }

// Err is the first error writing the history, or nil.
func (r *Recorder) Err() error {
	select {
	case <-r.failed:
		return r.failErr
	default:
		return nil
	}
}

// DefaultTenant tells tenants apart by their credentials without writing
// them down: "auth-" and 8 hex digits of the Authorization header's
// SHA-256 ("" without one).
func DefaultTenant(req *http.Request, _ []byte) string {
	a := req.Header.Get("Authorization")
	if a == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(a))
	return "auth-" + hex.EncodeToString(sum[:4])
}

// Stats are the attempts whose outcome the history holds, by outcome:
// what was written, not what was proxied (see [Recorder.Forwarded]).
func (r *Recorder) Stats() (ok, info, fail int64) { return r.ok.Load(), r.info.Load(), r.fail.Load() }

// Forwarded is how many requests were sent upstream: their invoke lines
// are in the history; after a failed write, some outcomes are not.
func (r *Recorder) Forwarded() int64 { return r.forwarded.Load() }

// Flush pushes anything buffered to the history's file (every event is
// flushed as it is written; this reports a late error).
func (r *Recorder) Flush() error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return r.w.Flush()
}

func (r *Recorder) now() int64 {
	// Never 0: the writer treats ns 0 as "unset" elsewhere.
	return max(int64(time.Since(r.start)), 1)
}

// clientOf numbers the client connections (remote address) in order of
// first appearance, so a report's lanes show which requests shared one.
func (r *Recorder) clientOf(remote string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.clients[remote]; ok {
		return n
	}
	n := len(r.clients) + 1
	r.clients[remote] = n
	return n
}

// hopByHop are the connection-level headers a proxy must not forward (RFC 9110 §7.6.1).
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// ServeHTTP forwards one request, recording its invoke and its outcome.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.serving.Add(1)
	defer r.serving.Done()
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxBody+1))
	if err != nil || len(body) > MaxBody {
		// Never forwarded, so nothing for the history to judge.
		http.Error(w, "idemchaos record: request body unreadable or larger than 16 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	if err := r.Err(); err != nil {
		refuse(w, err)
		return
	}
	op := r.ops.Add(1)
	key := req.Header.Get(r.opts.KeyHeader)
	inv := &history.Event{Type: history.TypeInvoke, Op: op, Tenant: r.opts.Tenant(req, body), Key: key,
		Client: r.clientOf(req.RemoteAddr),
		Req:    &history.Request{Method: req.Method, Path: req.URL.Path, Headers: r.headers(req.Header), Body: r.redactBody(req.Header.Get("Content-Type"), body)}}
	var (
		aim Aim
		hit bool
	)
	if r.opts.IntentHeader != "" {
		inv.Intent = req.Header.Get(r.opts.IntentHeader)
		if inv.Intent == "" {
			// A request the suite did not name is an intent of its own:
			// never merged with another, so never a false alarm.
			inv.Intent = fmt.Sprintf("unnamed-%d", op)
		}
		var index int
		inv.Attempt, index = r.attempt(inv.Intent)
		at := time.Since(r.start)
		for _, a := range r.opts.Faults {
			if a.hits(r.opts.Seed, inv.Intent, index, inv.Attempt, at) {
				aim, hit = a, true
				break
			}
		}
	}
	inv.NS = r.now()
	// The invoke is in the file before the upstream sees the request: what
	// the upstream executed, the history knows of.
	if err := r.commit(inv); err != nil {
		refuse(w, err)
		return
	}
	ans := aim.answer
	if hit {
		detail, _ := json.Marshal(map[string]any{"intent": inv.Intent, "attempt": inv.Attempt, "forwarded": ans.Forward})
		if err := r.commit(&history.Event{Type: history.TypeFault, Fault: aim.Kind, Action: "fire", Op: op, NS: r.now(), Detail: detail}); err != nil {
			refuse(w, err)
			return
		}
		if !ans.Forward {
			// The upstream never sees it: the proxy answers, or cuts.
			if ans.Cut != "" {
				clientpath.Cut(w, ans.Cut == faults.CutReset)
				how := map[bool]string{true: "reset", false: "closed"}[ans.Cut == faults.CutReset]
				r.record(&history.Event{Type: history.TypeFail, Op: op, NS: r.now(), By: "proxy", Error: "the fault proxy " + how + " the connection before forwarding"})
				return
			}
			h, b := clientpath.Answer(w, ans)
			r.record(&history.Event{Type: history.TypeOK, Op: op, NS: r.now(), By: "proxy",
				Resp: &history.Response{Status: ans.Status, Headers: r.headers(h), Body: b}, RetryAfterMS: clientpath.RetryAfterMS(h.Get("Retry-After"))})
			return
		}
	}
	r.forwarded.Add(1)

	// The upstream exchange outlives a client that hangs up: the server
	// may still execute, and the history is about the server.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(req.Context()), r.opts.Timeout)
	defer cancel()
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	out, err := http.NewRequestWithContext(ctx, req.Method, r.target(req.URL), bytes.NewReader(body))
	if err != nil {
		r.finish(w, op, history.TypeFail, "build request: "+err.Error())
		return
	}
	// No GetBody: the transport would silently re-send a request with an
	// Idempotency-Key on a broken reused connection, which the history
	// would not show.
	out.GetBody = nil
	out.Header = req.Header.Clone()
	for _, h := range hopByHop {
		out.Header.Del(h)
	}
	if r.opts.IntentHeader != "" {
		// The intent is the test suite's note to the recorder, not part
		// of the app's request.
		out.Header.Del(r.opts.IntentHeader)
	}
	if out.Header.Get("User-Agent") == "" {
		out.Header["User-Agent"] = nil // Go's default would be a lie about the client
	}
	out.Host = r.opts.Host
	if out.Host == "" {
		out.Host = r.opts.Upstream.Host
	}
	resp, err := r.client.Do(out)
	if err != nil {
		typ := history.TypeInfo
		if !connected.Load() {
			// No connection was made: not one byte reached the upstream.
			typ = history.TypeFail
		}
		r.finish(w, op, typ, describe(err, r.opts.Timeout))
		return
	}
	rbody, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	resp.Body.Close()
	if rerr != nil {
		r.finish(w, op, history.TypeInfo, fmt.Sprintf("status %d, then the body was cut: %s", resp.StatusCode, describe(rerr, r.opts.Timeout)))
		return
	}
	if hit {
		// The upstream executed; the fault replaces, drops or delays
		// its answer, as on a client run's path.
		switch {
		case ans.Cut == faults.CutReset:
			clientpath.Cut(w, true)
			r.record(&history.Event{Type: history.TypeInfo, Op: op, NS: r.now(), By: "proxy", Forwarded: true, Error: "the fault proxy reset the connection after the upstream answered"})
			return
		case ans.Cut == faults.CutStall:
			clientpath.Stall(w, ans.Delay, r.done)
			r.record(&history.Event{Type: history.TypeInfo, Op: op, NS: r.now(), By: "proxy", Forwarded: true, Error: "the fault proxy sent no answer after the upstream answered (a stall past the client's deadline)"})
			return
		case ans.Status != 0:
			h, b := clientpath.Answer(w, ans)
			r.record(&history.Event{Type: history.TypeOK, Op: op, NS: r.now(), By: "proxy", Forwarded: true,
				Resp: &history.Response{Status: ans.Status, Headers: r.headers(h), Body: b}, RetryAfterMS: clientpath.RetryAfterMS(h.Get("Retry-After"))})
			return
		case ans.Delay > 0:
			clientpath.Delay(ans.Delay, req.Context().Done(), r.done)
		}
	}
	// The client gets the upstream's answer even when it cannot be
	// recorded: the upstream acted on it.
	ok := &history.Event{Type: history.TypeOK, Op: op, NS: r.now(),
		Resp: &history.Response{Status: resp.StatusCode, Headers: r.headers(resp.Header), Body: r.redactBody(resp.Header.Get("Content-Type"), rbody)}}
	if r.opts.IntentHeader != "" {
		ok.RetryAfterMS = clientpath.RetryAfterMS(resp.Header.Get("Retry-After"))
	}
	r.record(ok)
	for k, vs := range resp.Header {
		if !isHopByHop(k) {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(rbody)
}

// record writes an attempt's outcome and counts it.
func (r *Recorder) record(e *history.Event) {
	if r.commit(e) != nil {
		return
	}
	switch e.Type {
	case history.TypeOK:
		r.ok.Add(1)
	case history.TypeFail:
		r.fail.Add(1)
	default:
		r.info.Add(1)
	}
}

// finish records an attempt without a response and tells the client.
func (r *Recorder) finish(w http.ResponseWriter, op int64, typ history.Type, msg string) {
	if r.commit(&history.Event{Type: typ, Op: op, NS: r.now(), Error: msg}) == nil {
		if typ == history.TypeFail {
			r.fail.Add(1)
		} else {
			r.info.Add(1)
		}
	}
	status := http.StatusBadGateway
	if strings.HasPrefix(msg, "timeout") {
		status = http.StatusGatewayTimeout
	}
	http.Error(w, "idemchaos record: upstream: "+msg, status)
}

// refuse answers a request that was not forwarded because the history
// cannot be written.
func refuse(w http.ResponseWriter, err error) {
	http.Error(w, "idemchaos record: not forwarded: the history cannot be written ("+err.Error()+")", http.StatusServiceUnavailable)
}

func (r *Recorder) target(u *url.URL) string {
	t := *r.opts.Upstream
	t.Path = strings.TrimRight(t.Path, "/") + u.Path
	t.RawPath = ""
	t.RawQuery = u.RawQuery
	return t.String()
}

func isHopByHop(name string) bool {
	for _, h := range hopByHop {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// headers flattens h in name order, joining repeated fields with ", "
// (RFC 9110), redacting the configured names.
func (r *Recorder) headers(h http.Header) history.Headers {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(history.Headers, 0, len(names))
	for _, k := range names {
		v := strings.Join(h[k], ", ")
		if r.redact[strings.ToLower(k)] {
			v = Redacted
		}
		out = append(out, history.Header{Name: k, Value: v})
	}
	return out
}

func describe(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("timeout after %s", timeout)
	}
	return err.Error()
}
