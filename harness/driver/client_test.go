package driver_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
)

// events runs intents and returns the raw events the driver wrote.
func events(t *testing.T, cfg driver.Config, in []driver.Intent) []history.Event {
	t.Helper()
	var buf bytes.Buffer
	rec, err := driver.NewRecorder(history.NewWriter(&buf), t.Name(), 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Recorder = rec
	if _, err := driver.Run(context.Background(), cfg, in); err != nil {
		t.Fatal(err)
	}
	var out []history.Event
	r := history.NewReader(&buf)
	for {
		var e history.Event
		err := r.Next(&e)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

// The request on the wire is the one net/http's client would send: Host,
// its User-Agent, a Content-Length, every header the history records
// (the token in clear), the query kept, the body whole.
func TestRun_WritesTheRequestNetHTTPWould(t *testing.T) {
	t.Parallel()
	type seen struct {
		host, uri, ua, auth, key, ctype, intent, body string
		length                                        int64
		te                                            []string
	}
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Host, r.RequestURI, r.UserAgent(), r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"),
			r.Header.Get("Content-Type"), r.Header.Get("X-Intent-Id"), string(b), r.ContentLength, r.TransferEncoding}
		w.WriteHeader(201)
	}))
	defer srv.Close()
	in := intents(1, "t1")
	in[0].Path = "/v1/orders?tenant=t1&x=a%20b"
	ev := events(t, driver.Config{BaseURL: srv.URL + "/", Tokens: map[string]string{"t1": "tok-1"}, IntentHeader: "x-intent-id",
		Headers: map[string]string{"content-type": "application/json"}}, in)
	s := <-got
	want := seen{strings.TrimPrefix(srv.URL, "http://"), "/v1/orders?tenant=t1&x=a%20b", "Go-http-client/1.1", "Bearer tok-1", "k0",
		"application/json", "i0", `{"sku":"A"}`, int64(len(`{"sku":"A"}`)), nil}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Fatalf("server saw %+v\nwant        %+v", s, want)
	}
	inv := ev[1]
	if inv.Type != history.TypeInvoke || fmt.Sprint(inv.Req.Headers) !=
		"[{Authorization [redacted]} {Content-Type application/json} {Idempotency-Key k0} {X-Intent-Id i0}]" {
		t.Fatalf("recorded invoke %+v, headers %v", inv, inv.Req.Headers)
	}
}

// rawServer answers each connection's requests with the responses of
// answer, in turn, then closes the connection; closed receives a value
// once it has.
type rawServer struct {
	ln       net.Listener
	received atomic.Int64
	conns    atomic.Int64
	closed   chan struct{}
}

func newRawServer(t *testing.T, answer ...string) *rawServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, closed: make(chan struct{}, 100)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go func() {
				defer func() { c.Close(); s.closed <- struct{}{} }()
				br := bufio.NewReader(c)
				for _, a := range answer {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					s.received.Add(1)
					io.WriteString(c, a)
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

// A server may close a kept-alive connection once it has answered (an
// idle timeout, a restart). The next request must not be sent on it and
// be recorded as indeterminate: it goes out on a new connection.
func TestRun_NoRequestOnAConnectionTheServerClosed(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}")
	// Each attempt after the first waits until the server has closed the
	// connection the previous one used.
	router := routeFunc(func(ctx context.Context, a driver.AttemptInfo) (driver.Route, error) {
		if a.Op > 1 {
			select {
			case <-srv.closed:
			case <-ctx.Done():
			}
		}
		return driver.Route{}, nil
	})
	h, st := run(t, driver.Config{BaseURL: "http://" + srv.ln.Addr().String(), Concurrency: 1, Router: router,
		Retry: driver.RetryPolicy{MaxAttempts: 1}, Deadline: 10 * time.Second}, intents(5, "t1"))
	if st.OK != 5 || st.Info != 0 || len(h.Attempts) != 5 || srv.received.Load() != 5 || srv.conns.Load() != 5 {
		t.Fatalf("stats %+v, %d attempts, server saw %d requests on %d connections; want 5 ok on 5 connections",
			st, len(h.Attempts), srv.received.Load(), srv.conns.Load())
	}
}

// Responses are read however they are framed (chunked, sized, delimited
// by the connection's end) and recorded byte for byte; a connection is
// reused only when its answer said it may be.
func TestRun_ReadsEveryFraming(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t,
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nX-A: 2\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
	)
	srv2 := newRawServer(t, "HTTP/1.0 202 Accepted\r\n\r\nuntil the end")
	in := intents(3, "t1")
	router := routeFunc(func(_ context.Context, a driver.AttemptInfo) (driver.Route, error) {
		if a.Intent.ID == "i2" {
			return driver.Route{BaseURL: "http://" + srv2.ln.Addr().String()}, nil
		}
		return driver.Route{}, nil
	})
	ev := events(t, driver.Config{BaseURL: "http://" + srv.ln.Addr().String(), Concurrency: 1, Router: router,
		Retry: driver.RetryPolicy{MaxAttempts: 1}}, in)
	var got []string
	for _, e := range ev {
		if e.Type == history.TypeOK {
			got = append(got, fmt.Sprintf("%d %s %v", e.Resp.Status, e.Resp.Body, e.Resp.Headers))
		} else if e.Type != history.TypeInvoke && e.Type != history.TypeMeta {
			t.Fatalf("unexpected %+v", e)
		}
	}
	want := []string{`201 {"a":1} [{X-A 1, 2}]`, "200 hello [{Content-Length 5}]", "202 until the end []"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("recorded\n%q\nwant\n%q", got, want)
	}
	if srv.conns.Load() != 1 || srv2.conns.Load() != 1 {
		t.Fatalf("%d and %d connections, want 1 and 1", srv.conns.Load(), srv2.conns.Load())
	}
}

// A status line and headers followed by less body than announced are not
// an answer: the attempt is indeterminate, and says what arrived.
func TestRun_CutBodyIsInfo(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, "HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\n{\"a\"")
	ev := events(t, driver.Config{BaseURL: "http://" + srv.ln.Addr().String(), Concurrency: 1,
		Retry: driver.RetryPolicy{MaxAttempts: 1}}, intents(1, "t1"))
	last := ev[len(ev)-1]
	if last.Type != history.TypeInfo || !strings.HasPrefix(last.Error, "status 201, then the body was cut") {
		t.Fatalf("last event %+v, want info on a cut body", last)
	}
}

// The run's deadline interrupts requests still waiting for an answer,
// however long their own timeout: they are recorded as indeterminate.
func TestRun_DeadlineInterruptsRequestsInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer func() {
		close(release) // before Close, which waits for the handlers
		srv.Close()
	}()
	h, st := run(t, driver.Config{BaseURL: srv.URL, Concurrency: 4, Deadline: 200 * time.Millisecond, Timeout: time.Minute,
		Retry: driver.RetryPolicy{MaxAttempts: 1}}, intents(4, "t1"))
	if st.Elapsed > 10*time.Second || len(h.Attempts) != 4 || st.Info != 4 {
		t.Fatalf("elapsed %s, %d attempts, stats %+v; want 4 info attempts soon after the deadline", st.Elapsed, len(h.Attempts), st)
	}
}

// A request larger than the socket's send buffer is written whole: the
// part the kernel does not take at once is written when it can be.
func TestRun_WritesARequestLargerThanTheSendBuffer(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("x"), 8<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read slowly at first, so that the client's writes fill the buffer.
		time.Sleep(50 * time.Millisecond)
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d %v", len(b), bytes.Equal(b, body))
	}))
	defer srv.Close()
	in := intents(2, "t1")
	for i := range in {
		in[i].Body = body
	}
	ev := events(t, driver.Config{BaseURL: srv.URL, Concurrency: 1, Retry: driver.RetryPolicy{MaxAttempts: 1}, Timeout: 20 * time.Second}, in)
	var got []string
	for _, e := range ev {
		if e.Type == history.TypeOK {
			got = append(got, string(e.Resp.Body))
		}
	}
	if want := fmt.Sprint(len(body)) + " true"; len(got) != 2 || got[0] != want || got[1] != want {
		t.Fatalf("server read %q, want %q twice", got, want)
	}
}

// Response headers are capped like bodies: 100 MB of them were recorded
// whole, on a history line longer than the reader takes (issue #22). The
// attempt is indeterminate and says why; a header just under the cap is
// still an answer (the cap counts from the reader's first 4 KiB on).
func TestRun_HeaderCappedLikeTheBody(t *testing.T) {
	t.Parallel()
	line := "X-Big: " + strings.Repeat("a", 64<<10) + "\r\n"
	over := "HTTP/1.1 201 Created\r\n" + strings.Repeat(line, 2*driver.MaxHeaderBytes/len(line)) + "Content-Length: 2\r\n\r\n{}"
	under := "HTTP/1.1 201 Created\r\n" + strings.Repeat(line, driver.MaxHeaderBytes/len(line)-1) + "Content-Length: 2\r\n\r\n{}"
	for name, c := range map[string]struct {
		answer string
		typ    history.Type
	}{"over": {over, history.TypeInfo}, "under": {under, history.TypeOK}} {
		srv := newRawServer(t, c.answer)
		ev := events(t, driver.Config{BaseURL: "http://" + srv.ln.Addr().String(), Concurrency: 1,
			Retry: driver.RetryPolicy{MaxAttempts: 1}}, intents(1, "t1"))
		last := ev[len(ev)-1]
		if last.Type != c.typ {
			t.Fatalf("%s: last event %s (%s), want %s", name, last.Type, last.Error, c.typ)
		}
		if c.typ == history.TypeInfo && !strings.Contains(last.Error, "response header longer than 1048576 bytes") {
			t.Errorf("%s: %q does not say the header was too long", name, last.Error)
		}
		b := history.AppendEvent(nil, &last)
		if len(b) > history.MaxLineBytes {
			t.Errorf("%s: a %d-byte history line", name, len(b))
		}
	}
}
