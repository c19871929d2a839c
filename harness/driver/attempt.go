package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// MaxResponseBytes bounds how much of a response body is read and recorded.
const MaxResponseBytes = 4 << 20

// result is what one attempt tells the client model.
type result struct {
	status        int // 0 when no response arrived
	hasRetryAfter bool
	retryAfter    time.Duration
	stop          bool // the run is over: no more attempts
	// op and invoked (its invoke event's time) are set once the attempt
	// was recorded (invoked > 0); aimed says the plan aimed a fault at it.
	// The key's clock reads them (see overdue.go).
	op, invoked int64
	aimed       bool
}

// scratch is what one attempt builds and records, reused by a later one:
// the history's writer has encoded an event when Write returns, and the
// recorder's sinks read it at once (see [Recorder.OnEvent]).
type scratch struct {
	ev   history.Event
	req  history.Request
	resp history.Response
	sent Rendered
	// wire are the request's header fields as sent, rec as recorded, got
	// the answer's as recorded.
	wire, rec, got history.Headers
	// body is the answer's body; out the request's bytes.
	body, out []byte
	// keepWire asks send for the answer as it came, for a relay
	// ([Forwarder]): a plain answer's status line and header in
	// wireHead, any other's header in fullHeader.
	keepWire   bool
	wireHead   []byte
	fullHeader http.Header
}

// maxPooledBuf bounds the buffers a scratch keeps: one large body should
// not pin its buffer for the rest of the run.
const maxPooledBuf = 64 << 10

func (d *runner) putScratch(s *scratch) {
	if cap(s.body) > maxPooledBuf {
		s.body = nil
	}
	if cap(s.out) > maxPooledBuf {
		s.out = nil
	}
	s.ev, s.req, s.resp, s.sent = history.Event{}, history.Request{}, history.Response{}, Rendered{}
	d.scratch.Put(s)
}

// attempt sends attempt n (click c) of an intent and records it.
// With g set, the attempt is a copy of a click sent together: it holds at
// g before its last byte, and leaves g on any path that does not.
func (d *runner) attempt(ctx context.Context, in *Intent, n, click int, g *gate) result {
	if g != nil {
		defer g.leave(click)
	}
	if ctx.Err() != nil || !d.take() {
		return result{stop: true}
	}
	s := d.scratch.Get().(*scratch)
	defer d.putScratch(s)
	rec := d.cfg.Recorder
	info := AttemptInfo{Op: rec.NextOp(), Intent: in, Attempt: n, Click: click, Key: d.cfg.Model.keyFor(in.Key, n)}
	if click == 0 {
		info.Fault = in.Faults[n]
	}
	res := result{op: info.Op, aimed: info.Fault != ""}
	// Rendered from this attempt's own key: a request never contradicts
	// its sender, and a new key per retry is in the body too.
	s.sent = d.cfg.Template.Render(in, info.Key)
	rq := &s.sent
	info.sent = rq
	hdr := d.headers(in, info, s.wire[:0])
	s.wire = hdr
	route := Route{}
	if d.cfg.Router != nil {
		r, err := d.cfg.Router.Route(ctx, info)
		if err != nil {
			// Nothing was sent: the op still gets its invoke before its
			// fail, so the history loads and shows the attempt for what it
			// was. A routing failure is the harness's, not the client's:
			// the intent goes on with its retries.
			res.invoked, res.stop = d.notSent(s, info, in, hdr, "route: "+err.Error()), ctx.Err() != nil
			return res
		}
		route = r
	}
	if route.Done != nil {
		defer route.Done()
	}
	base := d.cfg.BaseURL
	if route.BaseURL != "" {
		base = route.BaseURL
	}
	t, err := d.targets.get(base, rq.Path)
	if err == nil {
		err = validRequest(in.Method, hdr)
	}
	if err != nil {
		// The same request would fail the same way on every retry.
		res.invoked, res.stop = d.notSent(s, info, in, hdr, "build request: "+err.Error()), true
		return res
	}
	res.invoked = d.record(s, info, in, hdr, history.TypeInvoke, nil, "")

	w := wireRequest{method: in.Method, t: t, hdr: hdr, body: rq.Body, fresh: route.Fresh}
	if g != nil {
		w.hold = func(last func() error) error { return g.hold(click, last) }
	}
	ex, err := d.pool.send(ctx, &w, time.Now().Add(d.cfg.Timeout), s)
	if err == nil {
		err = ex.bodyErr
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// The run ended under the request: say so, not how the
			// connection was interrupted.
			err = cerr
		}
		kind, msg := history.TypeInfo, describeErr(err, d.cfg.Timeout)
		switch {
		case ex.gotHead:
			// The status arrived but not the whole body: the answer is unknown.
			msg = fmt.Sprintf("status %d, then the body was cut: %s", ex.head.status, msg)
		case msg == err.Error():
			// Worded as net/http's client words it: method, URL, cause.
			msg = urlErrorOp(in.Method) + " " + strconv.Quote(strings.TrimRight(base, "/")+rq.Path) + ": " + msg
		case !ex.gotConn && ctx.Err() == nil:
			// A connect that timed out: the service never took the
			// connection (eventually-decided tells capacity from a
			// service that had the request and did not answer).
			msg += ", no connection was made"
		}
		if ex.gotConn && !ex.gotHead && d.cfg.Upstream != nil && ctx.Err() == nil {
			if why := d.cfg.Upstream(ex.local, ex.remote, ex.dialed); why != "" {
				// The connection was the harness's proxy's: the service
				// itself never took it, as when it refuses directly.
				msg += "; the harness's proxy could not connect to the service (" + why + "), no connection was made"
			}
		}
		if !ex.gotConn && refused(err) {
			kind = history.TypeFail
			d.fail.Add(1)
		} else {
			d.info.Add(1)
		}
		d.record(s, info, in, nil, kind, nil, msg)
		res.stop = ctx.Err() != nil
		return res
	}
	d.ok.Add(1)
	d.record(s, info, in, nil, history.TypeOK, &ex, "")
	res.status = ex.head.status
	if v := ex.head.retryAfter; v != "" {
		res.retryAfter, res.hasRetryAfter = parseRetryAfter(v)
	}
	return res
}

// headers are the request header fields attempt info of in carries,
// canonical names in order, credentials in clear (for the wire), appended
// to dst.
func (d *runner) headers(in *Intent, info AttemptInfo, dst history.Headers) history.Headers {
	h := dst
	if info.sent.fromTemplate {
		h = append(h, d.static...)
	} else {
		h = appendFields(h, info.sent.Headers)
	}
	if info.Key != "" {
		h = setField(h, d.keyHeader, info.Key)
	}
	if d.intentHeader != "" {
		h = setField(h, d.intentHeader, in.ID)
	}
	if v, ok := d.bearer[in.Tenant]; ok {
		h = setField(h, "Authorization", v)
	}
	if d.cfg.Sign != nil {
		body := in.Body
		if info.sent != nil {
			body = info.sent.Body
		}
		if name, v := d.cfg.Sign(in, body); name != "" {
			h = setField(h, http.CanonicalHeaderKey(name), v)
		}
	}
	return h
}

// fieldsOf turns header values by name into fields with canonical names,
// in order, as http.Header.Set would keep them.
func fieldsOf(m map[string]string) history.Headers {
	return appendFields(make(history.Headers, 0, len(m)+3), m)
}

// appendFields is fieldsOf appending to h.
func appendFields(h history.Headers, m map[string]string) history.Headers {
	for name, v := range m {
		h = setField(h, http.CanonicalHeaderKey(name), v)
	}
	return h
}

// setField sets name to v in the ordered fields h, replacing its value if
// it is there.
func setField(h history.Headers, name, v string) history.Headers {
	i := 0
	for i < len(h) && h[i].Name < name {
		i++
	}
	if i < len(h) && h[i].Name == name {
		h[i].Value = v
		return h
	}
	return slices.Insert(h, i, history.Header{Name: name, Value: v})
}

// appendRedacted appends h as recorded to dst: credentials hidden.
func appendRedacted(dst, h history.Headers) history.Headers {
	n := len(dst)
	dst = append(dst, h...)
	for i := n; i < len(dst); i++ {
		if strings.EqualFold(dst[i].Name, "Authorization") {
			dst[i].Value = "[redacted]"
		}
	}
	return dst
}

// notSent records an attempt that provably never left the client: its
// invoke, then its fail. It returns the invoke's time.
func (d *runner) notSent(s *scratch, info AttemptInfo, in *Intent, hdr history.Headers, msg string) int64 {
	at := d.record(s, info, in, hdr, history.TypeInvoke, nil, "")
	d.fail.Add(1)
	d.record(s, info, in, nil, history.TypeFail, nil, "not sent: "+msg)
	return at
}

// record writes one event of the attempt from s: an invoke with the
// request hdr, an ok with the answer ex, or an info or fail saying msg.
// It returns the event's time on the run clock.
func (d *runner) record(s *scratch, info AttemptInfo, in *Intent, hdr history.Headers, typ history.Type, ex *exchange, msg string) int64 {
	s.ev = history.Event{Type: typ, Op: info.Op, Error: msg}
	e := &s.ev
	switch typ {
	case history.TypeInvoke:
		e.Intent, e.Tenant, e.Key, e.Attempt, e.Client = in.ID, in.Tenant, info.Key, info.Attempt, in.Client
		e.Resource, e.State = in.Resource, in.State
		path, sent := in.Path, in.Body
		if info.sent != nil {
			path, sent = info.sent.Path, info.sent.Body
		}
		s.rec = appendRedacted(s.rec[:0], hdr)
		s.req = history.Request{Method: in.Method, Path: path, Headers: s.rec, Body: sent}
		e.Req = &s.req
	case history.TypeOK:
		s.resp = history.Response{Status: ex.head.status, Headers: ex.head.header, Body: ex.body}
		e.Resp = &s.resp
	}
	_ = d.cfg.Recorder.Write(e)
	return e.NS
}

// urlErrorOp is how net/http names a method in its errors ("Post").
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	if lower := strings.ToLower(method); lower != "" {
		return method[:1] + lower[1:]
	}
	return method
}

// sortedNames are the field names of h in order.
func sortedNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// headersOf flattens a header map in name order, joining repeated fields
// with ", " (RFC 9110), and redacts credentials.
func headersOf(h http.Header) history.Headers {
	names := sortedNames(h)
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

// refused reports a dial that the peer refused: nothing was sent.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED)
}

func describeErr(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("timeout after %s", timeout)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Sprintf("timeout after %s", timeout)
	}
	if errors.Is(err, context.Canceled) {
		return "cancelled: the run ended"
	}
	return err.Error()
}
