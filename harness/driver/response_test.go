package driver

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// chunked reads its bytes a few at a time, as a slow connection delivers
// them: the header is then not all buffered at once.
type chunked struct {
	b   []byte
	rng *rand.Rand
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.b), 1+c.rng.IntN(40))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// randomAnswer builds an answer from the pieces that matter to a parser:
// versions, statuses, reason phrases, field names in any case or invalid,
// repeated and special fields, values with spaces, tabs, controls and
// obs-text, continuation lines, bare LFs, and bodies shorter or longer
// than announced.
func randomAnswer(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	// odd picks among the unusual pieces one time in ten, else among the
	// plain ones: most answers have one odd thing or none.
	odd := func(plain, unusual []string) string {
		if rng.IntN(10) == 0 {
			return pick(unusual...)
		}
		return pick(plain...)
	}
	list := func(xs ...string) []string { return xs }
	var b strings.Builder
	b.WriteString(odd(list("HTTP/1.1 "), list("HTTP/1.0 ", "HTTP/1.1  ", "HTTP/2.0 ", "HTTP/1.1", "http/1.1 ")))
	b.WriteString(odd(list("201", "200", "503", "409", "422", "599"),
		list("204", "304", "101", "100", "199", "099", "600", "2x1", "+01", "20", "1000")))
	b.WriteString(odd(list(" Created", "", " ", " Still \t processing"), list(" OK\r", "Created", " \x00\xff")))
	eol := func() string { return odd(list("\r\n"), list("\n", "\r\r\n", " \r\n")) }
	b.WriteString(eol())
	body := pick("", "{}", `{"id":"o-1"}`, strings.Repeat("x", 150))
	for n := rng.IntN(7); n > 0; n-- {
		name := odd(list("Content-Type", "content-type", "CONTENT-LENGTH", "Content-Length", "Date", "X-A", "x-a", "Retry-After",
			"retry-after", "Authorization", "authorization", "X_Under", "Set-Cookie", "Trailer", "x-B-c", "Location"),
			list("Connection", "Transfer-Encoding", "Pragma", "X-Sp ace", "X-Trail ", "", "Ünicode", " Lead", "\tTab", "X(y)"))
		var value string
		switch strings.ToLower(name) {
		case "content-length":
			value = odd(list(fmt.Sprint(len(body)), fmt.Sprint(len(body)+3), fmt.Sprint(max(0, len(body)-1)), "0"+fmt.Sprint(len(body)),
				" "+fmt.Sprint(len(body))+"\t"), list("", "abc", "-1", "+1", "99999999999999999999", "5000000", "1 2"))
		case "connection":
			value = pick("close", "keep-alive", "Close, x")
		case "transfer-encoding":
			value = pick("chunked", "identity", "gzip")
		default:
			value = odd(list("application/json", " 2 ", "\t1.5", "", "caf\xc3\xa9", "\xff", "x, y", "Bearer tok", "Mon, 30 Nov 2026", "no-cache"),
				list("a\x00b", "a\x7fb", "a\rb", "a\nb", "a\x1bb"))
		}
		b.WriteString(name + ":" + pick(" ", "", "  ") + value + eol())
		if rng.IntN(40) == 0 {
			b.WriteString(pick(" continued", "\tcontinued") + eol())
		}
	}
	if rng.IntN(3) > 0 {
		b.WriteString("Content-Length: " + fmt.Sprint(len(body)) + eol())
	}
	b.WriteString(eol())
	b.WriteString(body)
	return b.String()
}

// A plain answer read by readHead is the answer http.ReadResponse reads:
// the same status, the same header as recorded, the same Retry-After, the
// same body (or a body cut the same way). Anything readHead declines is
// left whole in the reader for http.ReadResponse. Checked on random
// answers, whole in the buffer and trickling in.
func TestReadHead_AsNetHTTP(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	read := 0
	const cases = 30000
	for n := 0; n < cases; n++ {
		raw := randomAnswer(rng)
		method := "POST"
		if rng.IntN(40) == 0 {
			method = "HEAD"
		}
		var src io.Reader = strings.NewReader(raw)
		if rng.IntN(4) == 0 {
			src = &chunked{b: []byte(raw), rng: rng}
		}
		br := bufio.NewReaderSize(src, 4<<10)
		if _, err := br.Peek(1); err != nil {
			t.Fatal(err)
		}
		before := br.Buffered()
		h, ok := readHead(br, method, nil, MaxResponseBytes)
		if !ok {
			if br.Buffered() != before {
				t.Fatalf("%q: declined after consuming %d bytes", raw, before-br.Buffered())
			}
			continue
		}
		read++
		want, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%q: readHead read it, http.ReadResponse failed: %v", raw, err)
		}
		got := fmt.Sprintf("%d %v %q %d", h.status, h.header, h.retryAfter, h.length)
		exp := fmt.Sprintf("%d %v %q %d", want.StatusCode, headersOf(want.Header), want.Header.Get("Retry-After"), want.ContentLength)
		if got != exp || want.Close || len(want.TransferEncoding) > 0 {
			t.Fatalf("%q:\nreadHead            %s\nhttp.ReadResponse   %s (close %v, transfer encoding %v)", raw, got, exp, want.Close,
				want.TransferEncoding)
		}
		body := make([]byte, h.length)
		_, gotErr := io.ReadFull(br, body)
		wantBody, wantErr := readBody(want, MaxResponseBytes)
		if (gotErr == nil) != (wantErr == nil) || gotErr == nil && !bytes.Equal(body, wantBody) {
			t.Fatalf("%q: body %q (%v), http.ReadResponse's %q (%v)", raw, body, gotErr, wantBody, wantErr)
		}
	}
	// The generator must give the fast path real work, not only declines.
	if read < cases/20 {
		t.Fatalf("readHead read %d of %d answers; the test exercises too little of it", read, cases)
	}
	t.Logf("readHead read %d of %d answers", read, cases)
}

// The answer the bench's handler and most services give is read here, not
// by http.ReadResponse.
func TestReadHead_ReadsAPlainAnswer(t *testing.T) {
	t.Parallel()
	raw := "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nDate: Mon, 30 Nov 2026 12:00:00 GMT\r\n" +
		"content-length: 2\r\nX-A: 1\r\nx-a:\t2 \r\nRetry-After: 3\r\nAuthorization: secret\r\n\r\n{}"
	br := bufio.NewReader(strings.NewReader(raw))
	br.Peek(1)
	h, ok := readHead(br, "POST", nil, MaxResponseBytes)
	want := "201 [{Authorization [redacted]} {Content-Length 2} {Content-Type application/json} " +
		"{Date Mon, 30 Nov 2026 12:00:00 GMT} {Retry-After 3} {X-A 1, 2}] 3 2"
	if got := fmt.Sprintf("%d %v %s %d", h.status, h.header, h.retryAfter, h.length); !ok || got != want {
		t.Fatalf("read %v: %s\nwant      %s", ok, got, want)
	}
	if rest, _ := io.ReadAll(br); string(rest) != "{}" {
		t.Fatalf("left %q, want the body", rest)
	}
}
