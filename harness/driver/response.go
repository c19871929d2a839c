package driver

import (
	"bufio"
	"bytes"
	"net/textproto"
	"strings"

	"github.com/idemchaos/idemchaos/history"
)

// Most answers a run gets are plain: HTTP/1.1, a sized body, a few header
// fields, all in the first segment read. Those are read here without
// building an http.Response (its header map, one string per value, the
// body's readers): a third of the driver's own cost per request. Anything
// else goes to http.ReadResponse untouched, so that what is recorded is
// always what the standard client reads; TestReadHead_AsNetHTTP holds the
// two to the same answers.

// head is a plain answer's status line and header as the driver records
// them.
type head struct {
	status int
	// header is the answer's header as recorded: canonical names in
	// order, repeated fields joined with ", ", credentials hidden (what
	// headersOf makes of http.ReadResponse's header).
	header history.Headers
	// retryAfter is the first Retry-After value, "" for none.
	retryAfter string
	// length is the body's length, from its Content-Length.
	length int64
}

// readHead reads the status line and header of a plain answer to a
// request of method from what br has buffered, appending the header to
// dst. A plain answer is HTTP/1.1, has a status that carries a body
// (200–599 but 204 and 304), a request method that reads it (not HEAD),
// exactly one Content-Length of at most limit, every line
// well formed and ended by CRLF, and none of the fields http.ReadResponse
// acts on or rewrites (Connection, Transfer-Encoding, Pragma). For
// anything else readHead consumes nothing and reports false:
// http.ReadResponse then reads the answer from the start. br must hold
// at least one byte.
func readHead(br *bufio.Reader, method string, dst history.Headers, limit int64) (head, bool) {
	if method == "HEAD" {
		return head{}, false
	}
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		// The header is not all there yet (or is not CRLF-ended).
		return head{}, false
	}
	// "HTTP/1.1 201" then the end of the line or a reason phrase, which
	// http.ReadResponse does not read.
	const proto = "HTTP/1.1 "
	if end < len(proto)+3 || string(buf[:len(proto)]) != proto {
		return head{}, false
	}
	status := 0
	for _, c := range buf[len(proto) : len(proto)+3] {
		if c < '0' || c > '9' {
			return head{}, false
		}
		status = status*10 + int(c-'0')
	}
	if status < 200 || status > 599 || status == 204 || status == 304 {
		return head{}, false
	}
	// The status line ends at its first LF, which a CR must precede, and
	// holds no other CR.
	line := bytes.IndexByte(buf, '\n')
	if line < len(proto)+4 || buf[line-1] != '\r' || bytes.IndexByte(buf[:line-1], '\r') >= 0 {
		return head{}, false
	}
	if rest := buf[len(proto)+3 : line-1]; len(rest) > 0 && rest[0] != ' ' {
		return head{}, false
	}
	h := head{status: status, header: dst, length: -1}
	// One string for the whole header: every name and value is a part of it.
	fields := string(buf[line+1 : end+2])
	for len(fields) > 0 {
		i := strings.Index(fields, "\r\n")
		f := fields[:i]
		fields = fields[i+2:]
		colon := strings.IndexByte(f, ':')
		if colon <= 0 {
			return head{}, false
		}
		name, value := f[:colon], f[colon+1:]
		canonical := true
		upper := true
		for j := 0; j < len(name); j++ {
			c := name[j]
			if !tokenByte[c] {
				return head{}, false
			}
			if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
				canonical = false
			}
			upper = c == '-'
		}
		if !canonical {
			name = textproto.CanonicalMIMEHeaderKey(name)
		}
		for j := 0; j < len(value); j++ {
			if !valueByte[value[j]] {
				return head{}, false
			}
		}
		value = trimSpace(value)
		switch name {
		case "Connection", "Transfer-Encoding", "Pragma":
			return head{}, false
		case "Content-Length":
			if h.length >= 0 || value == "" || len(value) > 8 {
				return head{}, false
			}
			n := int64(0)
			for j := 0; j < len(value); j++ {
				c := value[j]
				if c < '0' || c > '9' {
					return head{}, false
				}
				n = n*10 + int64(c-'0')
			}
			if n > limit {
				return head{}, false
			}
			h.length = n
		case "Retry-After":
			if h.retryAfter == "" && !h.hasField(name) {
				h.retryAfter = value
			}
		case "Authorization":
			value = "[redacted]"
		}
		h.add(name, value)
	}
	if h.length < 0 {
		return head{}, false
	}
	_, _ = br.Discard(end + 4)
	return h, true
}

// hasField reports whether the header already has a field named name.
func (h *head) hasField(name string) bool {
	for _, f := range h.header {
		if f.Name == name {
			return true
		}
	}
	return false
}

// add puts a field in name order, joining a repeated one to the first.
func (h *head) add(name, value string) {
	i := len(h.header)
	for i > 0 && h.header[i-1].Name > name {
		i--
	}
	if i > 0 && h.header[i-1].Name == name {
		if h.header[i-1].Value != "[redacted]" {
			h.header[i-1].Value += ", " + value
		}
		return
	}
	h.header = append(h.header, history.Header{})
	copy(h.header[i+1:], h.header[i:])
	h.header[i] = history.Header{Name: name, Value: value}
}

// trimSpace trims spaces and tabs, as net/textproto trims field values.
func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// tokenByte and valueByte are the bytes net/textproto accepts in a field
// name (an RFC 9110 token) and in a field value (visible ASCII, obs-text,
// space and tab).
var tokenByte, valueByte = func() (t, v [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
		v[c] = c >= 0x20 && c != 0x7f || c == '\t'
	}
	return t, v
}()
