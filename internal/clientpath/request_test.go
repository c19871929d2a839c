package clientpath

import (
	"bufio"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

// slowRequest reads raw as the fallback alone does: http.ReadRequest, as
// Go's own server reads a request.
func slowRequest(t testing.TB, raw string) (Request, []byte, bool) {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		return Request{}, nil, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return Request{}, nil, false
	}
	req := Request{Method: r.Method, URI: r.URL.RequestURI(), Close: r.Close}
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		for _, v := range r.Header[k] {
			req.Header = append(req.Header, history.Header{Name: k, Value: v})
		}
	}
	return req, body, true
}

// fastRequest reads raw by readPlain, reporting whether it was plain.
func fastRequest(raw string) (Request, []byte, bool) {
	br := bufio.NewReader(strings.NewReader(raw))
	_, _ = br.Peek(1)
	req, n, ok := readPlain(br)
	if !ok {
		return req, nil, false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return req, nil, false
	}
	return req, body, true
}

// sameRequest compares what the proxy takes of a request: its line, its
// fields as recorded and as forwarded, whether it closes, its body.
func sameRequest(t *testing.T, raw string, fast, slow Request, fb, sb []byte) {
	t.Helper()
	if fast.Method != slow.Method || fast.URI != slow.URI || fast.Close != slow.Close || string(fb) != string(sb) {
		t.Errorf("%q:\nreadPlain     %s %s close=%v body %q\nReadRequest   %s %s close=%v body %q", raw,
			fast.Method, fast.URI, fast.Close, fb, slow.Method, slow.URI, slow.Close, sb)
	}
	if got, want := fast.Recorded(), slow.Recorded(); !reflect.DeepEqual(got, want) {
		t.Errorf("%q: recorded\n%v\nwant (ReadRequest's)\n%v", raw, got, want)
	}
	if got, want := fast.Sorted("X-Intent", "i1"), slow.Sorted("X-Intent", "i1"); !reflect.DeepEqual(got, want) {
		t.Errorf("%q: forwarded\n%v\nwant (ReadRequest's)\n%v", raw, got, want)
	}
}

// Every request readPlain takes reads as http.ReadRequest reads it, and
// what it leaves to the fallback is what it should not read by hand.
func TestReadPlain_AsNetHTTP(t *testing.T) {
	const body = `{"sku":"A-100","qty":1}`
	plain := []string{
		"POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1:9\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\nIdempotency-Key: k1\r\nContent-Type: application/json\r\nAuthorization: Bearer s3cret\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/orders?dry=1&x=a%20b HTTP/1.1\r\nhost: h\r\nidempotency-key:   k2  \r\nx-trace: a\r\nX-Trace: b\r\ncontent-length: 23\r\n\r\n" + body,
		"GET /v1/orders/ord_1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nContent-Length: 0\r\nX-Empty:\r\n\r\n",
		"PUT /v1/a-b_c.d~e/ HTTP/1.1\r\nHost: h\r\nX-Intent: forged\r\nCookie: a=1\r\nCookie: b=2\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nX-Obs: caf\xc3\xa9\tx\r\nContent-Length: 23\r\n\r\n" + body,
		// Not "close" to HTTP, whatever Unicode folds to.
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nConnection: clo\u017fe\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nConnection: close\u00a0\r\nContent-Length: 23\r\n\r\n" + body,
	}
	for _, raw := range plain {
		fast, fb, ok := fastRequest(raw)
		if !ok {
			t.Errorf("%q: not read as plain", raw)
			continue
		}
		slow, sb, ok := slowRequest(t, raw)
		if !ok {
			t.Fatalf("%q: http.ReadRequest refused it", raw)
		}
		sameRequest(t, raw, fast, slow, fb, sb)
	}
	odd := []string{
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n17\r\n" + body + "\r\n0\r\n\r\n",
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/orders HTTP/1.0\r\nHost: h\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/or%64ers HTTP/1.1\r\nHost: h\r\nContent-Length: 23\r\n\r\n" + body,
		"POST //v1/orders HTTP/1.1\r\nHost: h\r\nContent-Length: 23\r\n\r\n" + body,
		"POST http://h/v1/orders HTTP/1.1\r\nHost: h\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nContent-Length: 23\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nHost: i\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nX-Folded: a\r\n b\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nX-Bad : a\r\nContent-Length: 23\r\n\r\n" + body,
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nContent-Length: +23\r\n\r\n" + body,
		"POST /v1/orders HTTP/1.1\nHost: h\nContent-Length: 23\n\n" + body,
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nContent-Length: 23\r\n",                                // the head not all there
		"POST /v1/orders HTTP/1.1\r\nHost: h\r\nPragma: no-cache\r\nContent-Length: 23\r\n\r\n" + body, // ReadRequest adds a Cache-Control
	}
	for _, raw := range odd {
		if _, _, ok := fastRequest(raw); ok {
			t.Errorf("%q: read as plain; it is the fallback's", raw)
		}
		// What the fallback makes of it is http.ReadRequest's own.
		br := bufio.NewReader(strings.NewReader(raw))
		req, n, rest, err := readRequest(br)
		slow, sb, ok := slowRequest(t, raw)
		if (err == nil) != ok {
			t.Errorf("%q: readRequest err %v, http.ReadRequest ok %v", raw, err, ok)
			continue
		}
		if !ok {
			continue
		}
		if n != -1 {
			t.Errorf("%q: the fallback gave a length %d", raw, n)
		}
		rb, _ := io.ReadAll(rest)
		sameRequest(t, raw, req, slow, rb, sb)
	}
}

// FuzzReadPlain: whatever readPlain takes, http.ReadRequest takes alike.
func FuzzReadPlain(f *testing.F) {
	f.Add("POST /v1/orders HTTP/1.1\r\nHost: h\r\nIdempotency-Key: k\r\nContent-Length: 2\r\n\r\n{}")
	f.Add("GET /a?b HTTP/1.1\r\nConnection: close, x\r\n\r\n")
	f.Add("POST /v1/orders HTTP/1.1\r\nX: \x80\r\nauthorization: a\r\nAuthorization: b\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		fast, fb, ok := fastRequest(raw)
		if !ok {
			return
		}
		slow, sb, ok := slowRequest(t, raw)
		if !ok {
			t.Fatalf("%q: readPlain took what http.ReadRequest refuses", raw)
		}
		sameRequest(t, raw, fast, slow, fb, sb)
	})
}
