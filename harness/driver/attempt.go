package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sort"
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
}

// attempt sends attempt n (click c) of an intent and records it.
func (d *runner) attempt(ctx context.Context, in *Intent, n, click int) result {
	if ctx.Err() != nil || !d.take() {
		return result{stop: true}
	}
	rec := d.cfg.Recorder
	info := AttemptInfo{Op: rec.NextOp(), Intent: in, Attempt: n, Click: click, Key: d.cfg.Model.keyFor(in.Key, n)}
	if click == 0 {
		info.Fault = in.Faults[n]
	}
	// Rendered from this attempt's own key: a request never contradicts
	// its sender, and a new key per retry is in the body too.
	rq := d.cfg.Template.Render(in, info.Key)
	info.sent = &rq
	hdr := d.headers(in, info)
	route := Route{}
	if d.cfg.Router != nil {
		r, err := d.cfg.Router.Route(ctx, info)
		if err != nil {
			// Nothing was sent: the op still gets its invoke before its
			// fail, so the history loads and shows the attempt for what it
			// was. A routing failure is the harness's, not the client's:
			// the intent goes on with its retries.
			d.notSent(info, in, hdr, "route: "+err.Error())
			return result{stop: ctx.Err() != nil}
		}
		route = r
	}
	if route.Done != nil {
		defer route.Done()
	}
	base, client := d.cfg.BaseURL, d.shared
	if route.BaseURL != "" {
		base = route.BaseURL
	}
	if route.Fresh {
		client = newClient(d.cfg, true)
		defer client.CloseIdleConnections()
	}

	actx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	var gotConn bool
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { gotConn = true }})
	req, err := http.NewRequestWithContext(actx, in.Method, strings.TrimRight(base, "/")+rq.Path, bytes.NewReader(rq.Body))
	if err != nil {
		// The same request would fail the same way on every retry.
		d.notSent(info, in, hdr, "build request: "+err.Error())
		return result{stop: true}
	}
	// No GetBody: http.Transport treats a request with an Idempotency-Key as
	// replayable and silently re-sends it on a broken reused connection. A
	// re-send the history does not show would make it a lie.
	req.GetBody = nil
	req.Header = hdr
	d.record(info, in, hdr, history.TypeInvoke, nil, nil, "")

	resp, err := client.Do(req)
	if err != nil {
		kind := history.TypeInfo
		if !gotConn && refused(err) {
			kind = history.TypeFail
			d.fail.Add(1)
		} else {
			d.info.Add(1)
		}
		d.record(info, in, nil, kind, nil, nil, describeErr(err, d.cfg.Timeout))
		return result{stop: ctx.Err() != nil}
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	resp.Body.Close()
	if rerr != nil {
		// The status arrived but not the whole body: the answer is unknown.
		d.info.Add(1)
		d.record(info, in, nil, history.TypeInfo, nil, nil, fmt.Sprintf("status %d, then the body was cut: %s", resp.StatusCode, describeErr(rerr, d.cfg.Timeout)))
		return result{stop: ctx.Err() != nil}
	}
	d.ok.Add(1)
	d.record(info, in, nil, history.TypeOK, resp, body, "")
	res := result{status: resp.StatusCode}
	if v := resp.Header.Get("Retry-After"); v != "" {
		res.retryAfter, res.hasRetryAfter = parseRetryAfter(v)
	}
	return res
}

// headers are the request headers attempt info of in carries.
func (d *runner) headers(in *Intent, info AttemptInfo) http.Header {
	h := make(http.Header, len(info.sent.Headers)+3)
	for name, v := range info.sent.Headers {
		h.Set(name, v)
	}
	if info.Key != "" {
		h.Set(d.cfg.KeyHeader, info.Key)
	}
	if d.cfg.IntentHeader != "" {
		h.Set(d.cfg.IntentHeader, in.ID)
	}
	if tok, ok := d.cfg.Tokens[in.Tenant]; ok {
		h.Set("Authorization", "Bearer "+tok)
	}
	return h
}

// notSent records an attempt that provably never left the client: its
// invoke, then its fail.
func (d *runner) notSent(info AttemptInfo, in *Intent, hdr http.Header, msg string) {
	d.record(info, in, hdr, history.TypeInvoke, nil, nil, "")
	d.fail.Add(1)
	d.record(info, in, nil, history.TypeFail, nil, nil, "not sent: "+msg)
}

func (d *runner) record(info AttemptInfo, in *Intent, hdr http.Header, typ history.Type, resp *http.Response, body []byte, msg string) {
	e := &history.Event{Type: typ, Op: info.Op, Error: msg}
	switch typ {
	case history.TypeInvoke:
		e.Intent, e.Tenant, e.Key, e.Attempt, e.Client = in.ID, in.Tenant, info.Key, info.Attempt, in.Client
		sent := info.sent
		if sent == nil {
			sent = &Rendered{Path: in.Path, Body: in.Body}
		}
		e.Req = &history.Request{Method: in.Method, Path: sent.Path, Headers: headersOf(hdr), Body: sent.Body}
	case history.TypeOK:
		e.Resp = &history.Response{Status: resp.StatusCode, Headers: headersOf(resp.Header), Body: body}
	}
	_ = d.cfg.Recorder.Write(e)
}

// headersOf flattens a header map in name order, joining repeated fields
// with ", " (RFC 9110), and redacts credentials.
func headersOf(h http.Header) history.Headers {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
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
