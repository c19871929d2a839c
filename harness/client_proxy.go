package harness

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/clientpath"
)

// clientPath is a client step's fault proxy: one listener per intent in
// front of the upstream, each a small HTTP reverse proxy of its own (an
// aimed answer is decided per attempt — the n-th request on that listener —
// which a TCP proxy such as Toxiproxy cannot say). Every attempt is
// recorded by the listener it arrived on: the ground truth of its intent.
type clientPath struct {
	rec *driver.Recorder
	// up forwards to the upstream, its connections shared by listeners.
	up        *driver.Forwarder
	faults    []builtFault
	windows   []TimedFault
	begun     time.Time // the step's start, for the windows
	keyHeader string
	// intentHeader, when set, tells the upstream the intent of every
	// request it forwards (the reference stores it on its orders, so its
	// effects carry ground truth); the client never sees it.
	intentHeader string
	// attribution: the first intent whose upstream answer named a resource.
	mu    sync.Mutex
	named map[[2]string]string
	pick  func([]byte) (string, bool)
}

// listener is one intent's address on the fault proxy.
type listener struct {
	path  *clientPath
	in    *driver.Intent
	srv   *clientpath.Server
	addr  string
	mu    sync.Mutex
	n     int
	ended chan struct{} // closed when the intent's invocation ended
}

// open starts intent in's listener, through the gate.
func (cp *clientPath) open(ctx context.Context, gate *addrgate.Gate, in *driver.Intent) (*listener, error) {
	ln, err := gate.Listen(ctx, addrgate.DefaultListen, "the client's proxy listener")
	if err != nil {
		return nil, err
	}
	l := &listener{path: cp, in: in, addr: ln.Addr().String(), ended: make(chan struct{})}
	l.srv = clientpath.Serve(ln, l.serve)
	return l, nil
}

// attempts is how many requests arrived on the listener.
func (l *listener) attempts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *listener) close() { l.srv.Close() }

// answerFor picks the fault that hits attempt n of in arriving at run time
// at (from the step's start): aimed at that attempt, at every attempt, or
// a timed window the attempt arrives in.
func (cp *clientPath) answerFor(in *driver.Intent, n int, at time.Duration) (builtFault, faults.Answer, bool) {
	id, ok := in.Faults[n]
	if !ok {
		id, ok = in.Faults[0] // every attempt
	}
	if ok {
		if i, good := parseFaultID(id); good && i < len(cp.faults) {
			if a, isPath := faults.ClientPathOf(cp.faults[i].fault); isPath {
				return cp.faults[i], a, true
			}
		}
	}
	for _, w := range cp.windows {
		if at >= w.At && (w.For <= 0 || at < w.At+w.For) {
			if a, isPath := faults.ClientPathOf(cp.faults[w.Fault].fault); isPath {
				return cp.faults[w.Fault], a, true
			}
		}
	}
	return builtFault{}, faults.Answer{}, false
}

// serve records attempt x and answers it: forwarded, or as the fault
// aimed at it says.
func (l *listener) serve(x *clientpath.Exchange) {
	cp := l.path
	r := &x.Req
	l.mu.Lock()
	l.n++
	n := l.n
	l.mu.Unlock()
	op := cp.rec.NextOp()
	_ = cp.rec.Write(&history.Event{Type: history.TypeInvoke, Op: op, Intent: l.in.ID, Tenant: l.in.Tenant,
		Key: r.Get(cp.keyHeader), Attempt: n, Listener: l.addr,
		Req: &history.Request{Method: r.Method, Path: r.URI, Headers: r.Recorded(), Body: r.Body}})
	f, ans, hit := cp.answerFor(l.in, n, time.Since(cp.begun))
	if hit {
		_ = cp.rec.Fault(f.spec.Kind, "fire", op, map[string]any{"intent": l.in.ID, "attempt": n, "forwarded": ans.Forward})
	}
	done := func(e history.Event) {
		e.Op = op
		if hit && (ans.Proxied() || e.Type != history.TypeOK) {
			e.By, e.Forwarded = "proxy", ans.Forward
		}
		_ = cp.rec.Write(&e)
	}
	if hit && !ans.Forward {
		if ans.Cut != "" {
			x.Cut(ans.Cut == faults.CutReset)
			done(history.Event{Type: history.TypeFail, Error: "the fault proxy " + map[bool]string{true: "reset", false: "closed"}[ans.Cut == faults.CutReset] + " the connection before forwarding"})
			return
		}
		done(answer(x, ans))
		return
	}
	// Detached from the client: a client that hangs up does not stop an
	// attempt the upstream is executing (it would not on a real network).
	resp, err := cp.up.Forward(context.Background(), r.Method, r.URI, r.Sorted(cp.intentHeader, l.in.ID), r.Body, 2*time.Minute)
	if err != nil {
		// The upstream gave no answer: the proxy answers as a gateway.
		x.Answer(faults.Answer{Status: http.StatusBadGateway, Headers: map[string]string{"Content-Type": "text/plain"},
			Body: fmt.Sprintf("502 from the fault proxy: upstream: %v\n", err)})
		// Whether it executed is unknown: the proxy says it forwarded.
		_ = cp.rec.Write(&history.Event{Type: history.TypeOK, Op: op, By: "proxy", Forwarded: true, Resp: &history.Response{Status: http.StatusBadGateway}})
		return
	}
	if resp.Status/100 == 2 {
		cp.saw(l.in, resp.Body)
	}
	switch {
	case hit && ans.Cut == faults.CutReset:
		x.Cut(true)
		done(history.Event{Type: history.TypeInfo, Error: "the fault proxy reset the connection after the upstream answered"})
	case hit && ans.Cut == faults.CutStall:
		x.Stall(ans.Delay, l.ended)
		done(history.Event{Type: history.TypeInfo, Error: "the fault proxy sent no answer after the upstream answered (a stall past the client's deadline)"})
	case hit && ans.Status != 0:
		done(answer(x, ans))
	default:
		if hit && ans.Delay > 0 {
			x.Delay(ans.Delay, l.ended)
		}
		x.Send(func(dst []byte) []byte { return resp.AppendWire(dst, r.Method) })
		done(history.Event{Type: history.TypeOK, Resp: &history.Response{Status: resp.Status, Headers: resp.Header, Body: resp.Body},
			RetryAfterMS: clientpath.RetryAfterMS(resp.RetryAfter)})
	}
}

// answer writes the proxy's own answer ans in the upstream's stead and
// returns its ok event.
func answer(x *clientpath.Exchange, ans faults.Answer) history.Event {
	h, body := x.Answer(ans)
	return history.Event{Type: history.TypeOK, Resp: &history.Response{Status: ans.Status, Headers: recordedHeaders(h), Body: body},
		RetryAfterMS: clientpath.RetryAfterMS(h.Get("Retry-After"))}
}

// saw notes an upstream answer of intent in that named a resource: the
// first intent it named it for owns its effect (a later replay to another
// intent does not).
func (cp *clientPath) saw(in *driver.Intent, body []byte) {
	id, ok := cp.pick(body)
	if !ok || id == "" {
		return
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	k := [2]string{in.Tenant, id}
	if _, taken := cp.named[k]; !taken {
		cp.named[k] = in.ID
	}
}

// intentOf is the intent an effect (tenant, id) is attributed to, "" for
// none: matched as the oracle reports it or by the id part of "<kind> <id>".
func (cp *clientPath) intentOf(tenant, id string) string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if in, ok := cp.named[[2]string{tenant, id}]; ok {
		return in
	}
	if _, rest, ok := strings.Cut(id, " "); ok {
		return cp.named[[2]string{tenant, rest}]
	}
	return ""
}

// recordedHeaders are a request's or response's headers as recorded:
// sorted, credentials hidden.
func recordedHeaders(h http.Header) history.Headers {
	names := slices.Sorted(maps.Keys(h))
	out := make(history.Headers, 0, len(names))
	for _, k := range names {
		v := strings.Join(h[k], ", ")
		if strings.EqualFold(k, "Authorization") {
			v = "[redacted]"
		}
		out = append(out, history.Header{Name: k, Value: v})
	}
	return out
}
