// Package clientpath does what a client-path fault ([faults.Answer]) asks
// of one attempt: answer in the upstream's stead, cut the connection, or
// stall it. The client run's per-intent proxy (harness) and `idemchaos
// record --faults` both apply faults through it, so a fault does the same
// thing to a client whichever of them aimed it.
package clientpath

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/faults"
)

// AnswerParts is the header and body of the proxy's own answer ans in
// the upstream's stead: the scenario's error shape, else the reference's
// JSON error (clients decide from the body too), with Retry-After in
// whole seconds rounded up.
func AnswerParts(ans faults.Answer) (http.Header, []byte) {
	h := http.Header{}
	body := ans.Body
	if body == "" {
		b, _ := json.Marshal(map[string]string{"error": ans.Code, "message": fmt.Sprintf("%d from idemchaos's fault proxy", ans.Status)})
		body = string(b)
		h.Set("Content-Type", "application/json")
	}
	for k, v := range ans.Headers {
		h.Set(k, v)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	if ans.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(ans.RetryAfter.Seconds()))))
	}
	return h, []byte(body)
}

// Answer writes the proxy's own answer ans ([AnswerParts]) to w. It
// returns the headers and body sent, for the history.
func Answer(w http.ResponseWriter, ans faults.Answer) (http.Header, []byte) {
	h, body := AnswerParts(ans)
	for k, vs := range h {
		w.Header()[k] = vs
	}
	w.WriteHeader(ans.Status)
	_, _ = w.Write(body)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	return w.Header(), body
}

// Cut ends the client's connection without an answer: reset (RST) or
// closed.
func Cut(w http.ResponseWriter, reset bool) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		cut(conn, reset)
	}
}

func cut(conn net.Conn, reset bool) {
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// Stall holds the client's connection without a byte until the client
// gives up (closes it), ended is closed, or hold runs out (default a
// minute).
func Stall(w http.ResponseWriter, hold time.Duration, ended <-chan struct{}) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		holdOpen(conn, conn, hold, ended)
	}
}

// holdOpen holds conn, read through r, without a byte until the client
// hangs up, ended is closed or hold runs out (default a minute), then
// closes it.
func holdOpen(conn net.Conn, r io.Reader, hold time.Duration, ended <-chan struct{}) {
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		_, _ = io.Copy(io.Discard, r) // EOF: the client hung up
	}()
	if hold <= 0 {
		hold = time.Minute
	}
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-gone:
	case <-ended:
	case <-t.C:
	}
	_ = conn.Close()
	<-gone
}

// Delay holds a slow answer back for d, or until the client is gone or
// ended is closed.
func Delay(d time.Duration, gone, ended <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-gone:
	case <-ended:
	}
}

// RetryAfterMS is the delay a Retry-After value asks for, in
// milliseconds: delay-seconds or an HTTP-date (0 for none or garbage).
func RetryAfterMS(v string) int64 {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return s * 1000
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t).Milliseconds(), 0)
	}
	return 0
}
