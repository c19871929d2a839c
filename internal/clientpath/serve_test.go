package clientpath

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/faults"
)

// serveWith starts a Server on loopback with handle, closed with the test.
func serveWith(t *testing.T, handle func(*Exchange)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, handle)
	t.Cleanup(s.Close)
	return ln.Addr().String()
}

// echo answers every request with its line and body.
func echo(x *Exchange) {
	body := x.Req.Method + " " + x.Req.URI + " " + string(x.Req.Body)
	x.Send(func(dst []byte) []byte {
		return append(dst, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body...)
	})
}

// wait fails the test when done is not closed in time: a bound, not a
// pause (the signal is done).
func wait(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10s", what)
	}
}

// One connection carries a plain request, a chunked one, one that waits
// for 100 Continue (curl's way with a large body) and a last one that asks
// to close: each answered in turn, the connection then ended.
func TestServer_KeepsAliveReadsEveryFramingAndCloses(t *testing.T) {
	addr := serveWith(t, echo)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // a bound: a missing answer fails, not hangs
	br := bufio.NewReader(c)
	read := func(want string) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(got) != want {
			t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, got, want)
		}
	}
	io.WriteString(c, "POST /v1/orders HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}")
	read("POST /v1/orders {}")
	io.WriteString(c, "POST /v1/chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	read("POST /v1/chunked abc")
	io.WriteString(c, "POST /v1/big HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q %v, want a 100 Continue", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "abcd")
	read("POST /v1/big abcd")
	io.WriteString(c, "GET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	read("GET /last ")
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after a Connection: close answer: %v, want the connection ended (EOF)", err)
	}
}

// A cut resets the connection (the client reads ECONNRESET) or closes it
// (EOF); the proxy's own answer carries the reference's error shape.
func TestServer_CutsAndAnswers(t *testing.T) {
	addr := serveWith(t, func(x *Exchange) {
		switch x.Req.URI {
		case "/reset":
			x.Cut(true)
		case "/close":
			x.Cut(false)
		default:
			x.Answer(faults.Answer{Status: 429, Code: "rate_limited", RetryAfter: 1500 * time.Millisecond})
		}
	})
	for path, want := range map[string]error{"/reset": syscall.ECONNRESET, "/close": io.EOF} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
		_, err = c.Read(make([]byte, 1))
		if !errors.Is(err, want) {
			t.Errorf("%s: read %v, want %v", path, err, want)
		}
		c.Close()
	}
	resp, err := http.Post("http://"+addr+"/v1/orders", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(string(body), `"error":"rate_limited"`) {
		t.Errorf("the proxy's answer: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// A stall and a delay both end when the client hangs up, long before
// their hold; a stall also ends when the invocation does.
func TestServer_StallAndDelayEndWhenTheClientHangsUp(t *testing.T) {
	ended := make(chan struct{})
	returned := map[string]chan struct{}{"/stall": make(chan struct{}), "/delay": make(chan struct{}), "/ended": make(chan struct{})}
	addr := serveWith(t, func(x *Exchange) {
		defer close(returned[x.Req.URI])
		switch x.Req.URI {
		case "/stall":
			x.Stall(time.Hour, nil)
		case "/ended":
			x.Stall(time.Hour, ended)
		default:
			x.Delay(time.Hour, nil)
		}
	})
	for _, path := range []string{"/stall", "/delay", "/ended"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
		if path == "/ended" {
			close(ended)
		} else {
			c.Close()
		}
		wait(t, returned[path], path)
		c.Close()
	}
}

// What Go's server refuses is refused alike (a request without Host, an
// expectation it cannot meet); stray line ends after a POST are skipped;
// a HEAD the proxy answers gets no body, so the next answer on the
// connection is read as itself.
func TestServer_RefusesAsGosServerAndFramesHEAD(t *testing.T) {
	addr := serveWith(t, func(x *Exchange) {
		if x.Req.Method == http.MethodHead {
			x.Answer(faults.Answer{Status: 503, Code: "unavailable"})
			return
		}
		echo(x)
	})
	exchange := func(raw string) string {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, raw)
		got, _ := io.ReadAll(c)
		return string(got)
	}
	if got := exchange("POST /v1/orders HTTP/1.1\r\nContent-Length: 0\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, "Host") {
		t.Errorf("no Host: %q, want a 400 naming it", got)
	}
	if got := exchange("POST /v1/orders HTTP/1.1\r\nHost: h\r\nExpect: magic\r\nContent-Length: 0\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 417 ") {
		t.Errorf("Expect: magic: %q, want a 417", got)
	}
	got := exchange("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}\r\n" +
		"HEAD /b HTTP/1.1\r\nHost: h\r\n\r\n" +
		"GET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(strings.NewReader(got))
	for _, want := range []struct {
		method string
		status int
		body   string
	}{{"POST", 200, "POST /a {}"}, {"HEAD", 503, ""}, {"GET", 200, "GET /c "}} {
		resp, err := http.ReadResponse(br, &http.Request{Method: want.method})
		if err != nil {
			t.Fatalf("%s: %v in %q", want.method, err, got)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want.status || string(body) != want.body {
			t.Errorf("%s: %d %q, want %d %q (all: %q)", want.method, resp.StatusCode, body, want.status, want.body, got)
		}
	}
}

// A body longer than the proxy reads is not forwarded whole (the handler
// has MaxRequestBody of it), and the answer still reaches the client
// before the connection ends (which it does half-closed first, as Go's
// server ends one, where a reset could overtake the answer).
func TestServer_ABodyTooLongGetsItsAnswer(t *testing.T) {
	addr := serveWith(t, func(x *Exchange) {
		body := strconv.Itoa(len(x.Req.Body))
		x.Send(func(dst []byte) []byte {
			return append(dst, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body...)
		})
	})
	big := strings.Repeat("x", MaxRequestBody+1<<20)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/orders", strings.NewReader(big))
	req.TransferEncoding = []string{"chunked"}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the client got no answer: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || string(got) != strconv.Itoa(MaxRequestBody) {
		t.Errorf("%d %q, want the handler's 413 having read %d bytes", resp.StatusCode, got, MaxRequestBody)
	}
}
