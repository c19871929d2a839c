package redis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// value is one RESP value as far as the hop needs to know it: its type
// byte, its text (a simple string, an error, a bulk string) or number, and
// an aggregate's elements. RESP3's types are read as well as RESP2's,
// since a client may switch with HELLO 3 (go-redis does by default).
type value struct {
	kind  byte
	null  bool
	str   string
	num   int64
	elems []value
}

// The sizes the reader accepts: redis-server's own limits (a 512 MB bulk
// string, proto-max-bulk-len) and far more elements than a command or a
// reply of a test run has; past them the link is cut rather than a
// malformed length allocating without bound.
const (
	maxBulk  = 512 << 20
	maxElems = 1 << 24
)

// errProtocol is a frame the reader cannot make sense of.
var errProtocol = errors.New("redis protocol")

// respReader reads whole RESP frames off a connection and keeps the bytes
// it read, so that the hop forwards exactly what it was sent.
type respReader struct {
	r   *bufio.Reader
	raw []byte
}

func newRespReader(r io.Reader) *respReader {
	return &respReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// buffered says whether more input is already waiting (the hop flushes
// what it forwards only when nothing is).
func (rr *respReader) buffered() bool { return rr.r.Buffered() > 0 }

// line reads one CRLF-terminated line into raw and returns it without
// its terminator.
func (rr *respReader) line() ([]byte, error) {
	start := len(rr.raw)
	for {
		chunk, err := rr.r.ReadSlice('\n')
		rr.raw = append(rr.raw, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		if len(rr.raw)-start > maxBulk {
			return nil, fmt.Errorf("%w: line longer than %d bytes", errProtocol, maxBulk)
		}
	}
	l := rr.raw[start : len(rr.raw)-1]
	return bytes.TrimSuffix(l, []byte("\r")), nil
}

// payload reads n bytes and their CRLF into raw.
func (rr *respReader) payload(n int) (string, error) {
	start := len(rr.raw)
	rr.raw = append(rr.raw, make([]byte, n+2)...)
	if _, err := io.ReadFull(rr.r, rr.raw[start:]); err != nil {
		return "", err
	}
	if !bytes.HasSuffix(rr.raw, []byte("\r\n")) {
		return "", fmt.Errorf("%w: bulk string not followed by CRLF", errProtocol)
	}
	return string(rr.raw[start : start+n]), nil
}

// reply reads one reply of the server: its value and the bytes it came
// in (valid until the next read). An attribute (RESP3's "|") is read
// with the reply it annotates, as one frame.
func (rr *respReader) reply() (value, []byte, error) {
	rr.raw = rr.raw[:0]
	v, err := rr.value()
	for err == nil && v.kind == '|' {
		v, err = rr.value()
	}
	return v, rr.raw, err
}

func (rr *respReader) value() (value, error) {
	l, err := rr.line()
	if err != nil {
		return value{}, err
	}
	if len(l) == 0 {
		return value{}, fmt.Errorf("%w: empty line where a value was due", errProtocol)
	}
	v := value{kind: l[0]}
	rest := string(l[1:])
	switch v.kind {
	case '+', '-', ',', '#', '(':
		v.str = rest
	case '_':
		v.null = true
	case ':':
		if v.num, err = strconv.ParseInt(rest, 10, 64); err != nil {
			return v, fmt.Errorf("%w: integer %q", errProtocol, rest)
		}
	case '$', '!', '=':
		n, err := size(rest, maxBulk)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.null = true
			return v, nil
		}
		v.str, err = rr.payload(n)
		return v, err
	case '*', '~', '>', '%', '|':
		n, err := size(rest, maxElems)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.null = true
			return v, nil
		}
		if v.kind == '%' || v.kind == '|' {
			n *= 2 // a map's keys and values
		}
		v.elems = make([]value, 0, min(n, 1024))
		for range n {
			e, err := rr.value()
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
	default:
		return v, fmt.Errorf("%w: unknown type %q", errProtocol, v.kind)
	}
	return v, nil
}

// size reads a length; -1 is RESP's null.
func size(s string, limit int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < -1 || n > limit {
		return 0, fmt.Errorf("%w: length %q", errProtocol, s)
	}
	return n, nil
}

// command reads one command of a client: its arguments and the bytes it
// came in. A client sends an array of bulk strings; an inline command (a
// bare line, as typed into telnet) is split at blanks. An empty inline
// line is a command of no arguments, which the server ignores without a
// reply.
func (rr *respReader) command() ([]string, []byte, error) {
	rr.raw = rr.raw[:0]
	b, err := rr.r.Peek(1)
	if err != nil {
		return nil, nil, err
	}
	if b[0] != '*' {
		l, err := rr.line()
		if err != nil {
			return nil, nil, err
		}
		return strings.Fields(string(l)), rr.raw, nil
	}
	v, err := rr.value()
	if err != nil {
		return nil, nil, err
	}
	args := make([]string, 0, len(v.elems))
	for _, e := range v.elems {
		if e.kind != '$' || e.null {
			return nil, nil, fmt.Errorf("%w: a command's argument of type %q", errProtocol, e.kind)
		}
		args = append(args, e.str)
	}
	return args, rr.raw, nil
}
