package clientpath

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/httptoken"
)

// Request is a client's request as the proxy reads it.
type Request struct {
	Method string
	// URI is the request-target as http.Request.URL.RequestURI gives it.
	URI string
	// Header holds the fields as they came (canonical names; Host left
	// out, as net/http's server leaves it out of a request's header).
	Header history.Headers
	Body   []byte
	// Close says the client asked for the connection to end after the
	// answer; Continue that it waits for a 100 Continue before its body.
	Close, Continue bool
}

// Get is the first value of field name ("" for none).
func (r *Request) Get(name string) string {
	v, _ := r.Header.Get(name)
	return v
}

// Recorded are the fields as a history records a request's: in name
// order, repeated ones joined with ", " in the order they came,
// credentials hidden (what the harness recorded of an http.Header).
func (r *Request) Recorded() history.Headers {
	out := slices.Clone(r.Header)
	slices.SortStableFunc(out, func(a, b history.Header) int { return strings.Compare(a.Name, b.Name) })
	j := 0
	for i, f := range out {
		if j > 0 && out[j-1].Name == f.Name {
			out[j-1].Value += ", " + f.Value
			continue
		}
		out[j] = out[i]
		j++
	}
	out = out[:j]
	for i := range out {
		if out[i].Name == "Authorization" {
			out[i].Value = "[redacted]"
		}
	}
	return out
}

// Sorted are the fields in name order, repeated ones apart in the order
// they came, with field name set to value (added when absent; nothing
// done for an empty name).
func (r *Request) Sorted(name, value string) history.Headers {
	name = textproto.CanonicalMIMEHeaderKey(name)
	out := make(history.Headers, 0, len(r.Header)+1)
	for _, f := range r.Header {
		if name == "" || f.Name != name {
			out = append(out, f)
		}
	}
	if name != "" {
		out = append(out, history.Header{Name: name, Value: value})
	}
	slices.SortStableFunc(out, func(a, b history.Header) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// readRequest reads the next request's head from br: a plain one by
// readPlain, any other by http.ReadRequest. length is the body's
// Content-Length (-1: chunked or unknown, body then reads it).
func readRequest(br *bufio.Reader) (req Request, length int64, body io.Reader, err error) {
	if _, err := br.Peek(1); err != nil {
		return req, 0, nil, err
	}
	if req, length, ok := readPlain(br); ok {
		return req, length, nil, nil
	}
	r, err := http.ReadRequest(br)
	if err != nil {
		return req, 0, nil, err
	}
	// What Go's server refuses after ReadRequest, it is refused here too.
	if r.ProtoAtLeast(1, 1) && r.Host == "" && r.Method != http.MethodConnect {
		return req, 0, nil, errRefused{http.StatusBadRequest, "missing required Host header"}
	}
	expect := r.Header.Get("Expect")
	req = Request{Method: r.Method, URI: r.URL.RequestURI(), Close: r.Close,
		Continue: asciiFold(expect, "100-continue") && r.ProtoAtLeast(1, 1) && r.ContentLength != 0}
	if expect != "" && !asciiFold(expect, "100-continue") {
		return req, 0, nil, errRefused{http.StatusExpectationFailed, ""}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		for _, v := range r.Header[k] {
			req.Header = append(req.Header, history.Header{Name: k, Value: v})
		}
	}
	return req, -1, r.Body, nil
}

// errRefused is a request Go's server answers with status and closes.
type errRefused struct {
	status int
	why    string
}

func (e errRefused) Error() string { return strconv.Itoa(e.status) + " " + e.why }

// errPlain says a head is not plain; readPlain then consumed nothing.
var errPlain = errors.New("not plain")

// readPlain reads the head of a plain request from what br has buffered,
// without net/textproto's header map (most of what reading a request
// cost the proxy): HTTP/1.1, a token method, a target of a path of
// unreserved bytes and slashes and a query of visible bytes, every field
// line well formed and CRLF-ended, at most one Host and one
// Content-Length (of at most MaxRequestBody), no Transfer-Encoding,
// Expect, Upgrade or Pragma (which ReadRequest adds a Cache-Control for). Anything else consumes nothing and reports false, for
// http.ReadRequest to read from the start; TestReadPlain_AsNetHTTP holds
// the two to the same requests.
func readPlain(br *bufio.Reader) (Request, int64, bool) {
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return Request{}, 0, false
	}
	head := string(buf[:end+2])
	line, fields, _ := strings.Cut(head, "\r\n")
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || proto != "HTTP/1.1" || !httptoken.Valid(method) || !plainTarget(target) {
		return Request{}, 0, false
	}
	req := Request{Method: method, URI: target}
	length, hosts := int64(-1), 0
	for fields != "" {
		f, more, _ := strings.Cut(fields, "\r\n")
		fields = more
		name, value, ok := strings.Cut(f, ":")
		if !ok || !httptoken.Valid(name) || strings.ContainsFunc(value, badValueRune) {
			return Request{}, 0, false
		}
		name = textproto.CanonicalMIMEHeaderKey(name)
		value = strings.Trim(value, " \t")
		switch name {
		case "Transfer-Encoding", "Expect", "Upgrade", "Pragma":
			return Request{}, 0, false
		case "Host":
			if hosts++; hosts > 1 {
				return Request{}, 0, false
			}
			continue
		case "Content-Length":
			n, err := plainLength(value)
			if err != nil || length >= 0 {
				return Request{}, 0, false
			}
			length = n
		case "Connection":
			req.Close = req.Close || hasToken(value, "close")
		}
		req.Header = append(req.Header, history.Header{Name: name, Value: value})
	}
	if length < 0 {
		length = 0
	}
	if hosts == 0 {
		return Request{}, 0, false // refused by the fallback, as Go's server refuses it
	}
	_, _ = br.Discard(end + 4)
	return req, length, true
}

// plainTarget is a request-target RequestURI gives back as it is.
func plainTarget(t string) bool {
	if t == "" || t[0] != '/' {
		return false
	}
	path, query, _ := strings.Cut(t, "?")
	for i := 0; i < len(path); i++ {
		c := path[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
			return false
		}
	}
	for i := 0; i < len(query); i++ {
		if c := query[i]; c <= ' ' || c >= 0x7f || c == '#' || c == ';' {
			return false
		}
	}
	return !strings.Contains(path, "//") && !strings.Contains(path, "/./") && !strings.Contains(path, "/../")
}

// plainLength reads a Content-Length of at most MaxRequestBody.
func plainLength(v string) (int64, error) {
	if v == "" || len(v) > 8 {
		return 0, errPlain
	}
	n := int64(0)
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, errPlain
		}
		n = n*10 + int64(v[i]-'0')
	}
	if n > MaxRequestBody {
		return 0, errPlain
	}
	return n, nil
}

// badValueRune is a byte net/textproto refuses in a field value.
func badValueRune(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }

// hasToken reports whether a comma-separated field value holds token,
// as net/http reads one: spaces and tabs trimmed, ASCII case folded.
func hasToken(v, token string) bool {
	for part := range strings.SplitSeq(v, ",") {
		if asciiFold(strings.Trim(part, " \t"), token) {
			return true
		}
	}
	return false
}

// asciiFold is strings.EqualFold over ASCII only (no Unicode folds: "ſ"
// is not "s" to HTTP).
func asciiFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
