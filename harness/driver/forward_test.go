package driver

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// closed hears from rawUpstream each time it closed a connection after
// its answer (closeAfter).
var closed = make(chan struct{}, 16)

// rawUpstream answers every request with answer's bytes, closing the
// connection after each when closeAfter is set (said on closed); got
// receives each request as read.
func rawUpstream(t *testing.T, answer string, closeAfter bool) (base string, got chan *http.Request, served *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got, served = make(chan *http.Request, 16), &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.ReadAll(r.Body)
					served.Add(1)
					got <- r
					if _, err := io.WriteString(c, answer); err != nil {
						return
					}
					if closeAfter {
						c.Close()
						closed <- struct{}{}
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), got, served
}

// A plain answer reaches the client byte for byte as the upstream wrote
// it; what is recorded is its header without Content-Length. The request
// goes on with the client's fields in their order, less the hop-by-hop
// ones, and the upstream's Host.
func TestForward_APlainAnswerAsItCame(t *testing.T) {
	const answer = "HTTP/1.1 201 Created\r\nX-B: 1\r\ncontent-type: application/json\r\nContent-Length: 14\r\nRetry-After: 3\r\n\r\n{\"id\":\"ord_1\"}"
	base, got, _ := rawUpstream(t, answer, false)
	f := NewForwarder(base, 2, nil)
	defer f.Close()
	hdr := history.Headers{{Name: "Authorization", Value: "Bearer s3cret"}, {Name: "Connection", Value: "keep-alive"},
		{Name: "Idempotency-Key", Value: "k1"}, {Name: "Te", Value: "trailers"}, {Name: "X-Intent", Value: "i1"}}
	a, err := f.Forward(context.Background(), "POST", "/v1/orders?x=1", hdr, []byte(`{}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if wire := string(a.AppendWire(nil, "POST")); wire != answer {
		t.Errorf("relayed\n%q\nwant the upstream's bytes\n%q", wire, answer)
	}
	want := history.Headers{{Name: "Content-Type", Value: "application/json"}, {Name: "Retry-After", Value: "3"}, {Name: "X-B", Value: "1"}}
	if a.Status != 201 || a.RetryAfter != "3" || string(a.Body) != `{"id":"ord_1"}` || !sameHeaders(a.Header, want) {
		t.Errorf("answer %d %q %q %v, want 201, Retry-After 3, its body, header %v", a.Status, a.RetryAfter, a.Body, a.Header, want)
	}
	r := <-got
	if r.URL.RequestURI() != "/v1/orders?x=1" || r.Host != strings.TrimPrefix(base, "http://") || r.Header.Get("Authorization") != "Bearer s3cret" ||
		r.Header.Get("Idempotency-Key") != "k1" || r.Header.Get("X-Intent") != "i1" || r.Header.Get("Te") != "" || r.ContentLength != 2 {
		t.Errorf("the upstream got %s %s Host %q header %v length %d", r.Method, r.URL, r.Host, r.Header, r.ContentLength)
	}
}

func sameHeaders(a, b history.Headers) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Any other answer (here chunked, with a field twice) is relayed whole
// with its length stated — one write — its repeated fields kept apart,
// and no Transfer-Encoding.
func TestForward_AChunkedAnswerRelayedWithItsLength(t *testing.T) {
	const answer = "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
	base, _, _ := rawUpstream(t, answer, false)
	f := NewForwarder(base, 2, nil)
	defer f.Close()
	a, err := f.Forward(context.Background(), "GET", "/x", nil, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wire := string(a.AppendWire(nil, "GET"))
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(wire)), nil)
	if err != nil {
		t.Fatalf("%q: %v", wire, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "abcde" || resp.ContentLength != 5 || len(resp.TransferEncoding) != 0 || len(resp.Header["Set-Cookie"]) != 2 {
		t.Errorf("relayed %q: body %q, length %d, %v, cookies %v", wire, body, resp.ContentLength, resp.TransferEncoding, resp.Header["Set-Cookie"])
	}
	if v, _ := a.Header.Get("Set-Cookie"); v != "a=1, b=2" || strings.Contains(wire, "Transfer-Encoding") {
		t.Errorf("recorded %v", a.Header)
	}
}

// An upstream that closes its connection after each answer, unannounced
// (as an idle timeout does): the next request finds the connection dead
// before it is sent, goes on a new one
// and is answered — never an error, and never sent twice.
func TestForward_AConnectionTheUpstreamClosedIsNotUsed(t *testing.T) {
	base, _, served := rawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true)
	f := NewForwarder(base, 2, nil)
	defer f.Close()
	for i := range 5 {
		if _, err := f.Forward(context.Background(), "POST", "/v1/orders", nil, []byte("{}"), 5*time.Second); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		<-closed // the connection kept idle is dead now, as an upstream's idle timeout leaves it
	}
	if n := served.Load(); n != 5 {
		t.Errorf("the upstream served %d requests for 5 forwarded", n)
	}
}

// An answer longer than the driver records of its own (4 MiB) is relayed
// whole, as the proxy relayed one before; a plain head's hop-by-hop field
// is not relayed.
func TestForward_ALargeAnswerAndAHopByHopField(t *testing.T) {
	body := strings.Repeat("x", 6<<20)
	base, _, _ := rawUpstream(t, "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nX-A: 1\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body, false)
	f := NewForwarder(base, 2, nil)
	defer f.Close()
	a, err := f.Forward(context.Background(), "GET", "/big", nil, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wire := string(a.AppendWire(nil, "GET"))
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(wire)), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if len(got) != len(body) || resp.Header.Get("X-A") != "1" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("relayed %d of %d bytes, header %v: want it whole, X-A kept, Keep-Alive not relayed", len(got), len(body), resp.Header)
	}
}

// Close ends a forward still dialling (an upstream that drops SYNs), not
// only those waiting on an answer.
func TestForward_CloseEndsADial(t *testing.T) {
	dialling := make(chan struct{})
	f := NewForwarder("http://127.0.0.1:9", 1, func(ctx context.Context, _, _ string) (net.Conn, error) {
		close(dialling)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	done := make(chan error, 1)
	go func() {
		_, err := f.Forward(context.Background(), "POST", "/v1/orders", nil, nil, 2*time.Minute)
		done <- err
	}()
	<-dialling
	f.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a forward closed while dialling succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a forward that was dialling")
	}
}
