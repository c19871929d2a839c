package clientpath

import (
	"bufio"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/faults"
)

// Server serves HTTP/1.1 on one listener, each connection on a goroutine
// of its own that reads a request, has handle answer it and writes the
// answer itself: net/http's server would add a goroutine that watches the
// connection while the handler runs, and a hijack for every cut or stall.
// Requests are read as Go's own server reads them (see readPlain).
type Server struct {
	ln     net.Listener
	handle func(*Exchange)
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// MaxRequestBody bounds what is read of a request's body: the rest is not
// forwarded, and the connection ends after the answer.
const MaxRequestBody = 8 << 20

// Serve starts serving ln with handle, until Close.
func Serve(ln net.Listener, handle func(*Exchange)) *Server {
	s := &Server{ln: ln, handle: handle, conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		})
	}
}

// Close stops the listener and ends every connection, handled requests
// included, and waits for their goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	_ = s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serve reads requests on c until it ends, a request asks to close it or
// an exchange ends it.
func (s *Server) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 4<<10)
	var out []byte
	post := false
	for {
		if post {
			// As Go's server: up to four stray CR or LF after a POST's
			// body (old clients') are not a request.
			peek, _ := br.Peek(4)
			n := 0
			for n < len(peek) && (peek[n] == '\r' || peek[n] == '\n') {
				n++
			}
			_, _ = br.Discard(n)
		}
		req, length, body, err := readRequest(br)
		if err != nil {
			refused := errRefused{status: http.StatusBadRequest}
			if errors.As(err, &refused) || !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				_, _ = c.Write(appendAnswer(nil, refused.status, http.Header{"Connection": {"close"}}, []byte(refused.why), false))
			}
			return
		}
		post = req.Method == http.MethodPost
		x := &Exchange{Req: req, conn: c, br: br, out: out[:0], keep: !req.Close}
		if req.Continue {
			if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
				return
			}
		}
		if length >= 0 {
			x.Req.Body = make([]byte, length)
			_, err = io.ReadFull(br, x.Req.Body)
		} else {
			x.Req.Body, err = io.ReadAll(io.LimitReader(body, MaxRequestBody))
			if n, _ := body.Read(make([]byte, 1)); n > 0 {
				// Longer than read: the rest cannot be framed. The answer
				// goes out, then the connection ends as Go's server ends
				// one (half-closed, what the client still sends read),
				// not with a reset that could arrive before the answer.
				x.keep = false
				defer lingerClose(c, br)
			}
		}
		if err != nil {
			return
		}
		s.handle(x)
		if !x.keep || !x.answered {
			return
		}
		out = x.out
	}
}

// Exchange is one request on a client's connection and what it gets: one
// of Send, Answer, Cut or Stall, once.
type Exchange struct {
	Req  Request
	conn net.Conn
	br   *bufio.Reader
	out  []byte
	// keep says the connection carries the client's next request;
	// answered that it got an answer.
	keep, answered bool
}

// Send writes an answer's bytes, built by build, in one write. A request
// that asked to close the connection gets it closed after.
func (x *Exchange) Send(build func(dst []byte) []byte) {
	x.out = build(x.out[:0])
	_, err := x.conn.Write(x.out)
	x.answered = err == nil
}

// Answer writes the proxy's own answer ans in the upstream's stead (see
// [AnswerParts]); it returns the header and body sent, for the history.
func (x *Exchange) Answer(ans faults.Answer) (http.Header, []byte) {
	h, body := AnswerParts(ans)
	x.Send(func(dst []byte) []byte {
		return appendAnswer(dst, ans.Status, h, body, x.Req.Method == http.MethodHead)
	})
	return h, body
}

// appendAnswer appends a whole answer: the status line, h in name order,
// the body's length and, but to a HEAD (head), the body.
func appendAnswer(dst []byte, status int, h http.Header, body []byte, head bool) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, ' ')
	dst = append(dst, http.StatusText(status)...)
	dst = append(dst, "\r\n"...)
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			dst = append(append(append(append(dst, k...), ": "...), v...), "\r\n"...)
		}
	}
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n\r\n"...)
	if head {
		return dst
	}
	return append(dst, body...)
}

// Cut ends the client's connection without an answer: reset (RST) or
// closed.
func (x *Exchange) Cut(reset bool) {
	x.keep = false
	cut(x.conn, reset)
}

// Stall holds the client's connection without a byte until the client
// gives up (closes it), ended is closed, or hold runs out (default a
// minute); the connection then ends.
func (x *Exchange) Stall(hold time.Duration, ended <-chan struct{}) {
	x.keep = false
	holdOpen(x.conn, x.br, hold, ended)
}

// Delay holds a slow answer back for d, or until the client hangs up or
// ended is closed.
func (x *Exchange) Delay(d time.Duration, ended <-chan struct{}) {
	gone := make(chan struct{})
	peeked := make(chan struct{})
	go func() {
		defer close(peeked)
		if _, err := x.br.Peek(1); err != nil && !isTimeout(err) {
			close(gone) // the client hung up (a pipelined request is not that)
		}
	}()
	Delay(d, gone, ended)
	// Interrupt the peek, keeping what it read for the next request.
	_ = x.conn.SetReadDeadline(time.Unix(1, 0))
	<-peeked
	_ = x.conn.SetReadDeadline(time.Time{})
}

// lingerClose closes c's writing half and reads what its client still
// sends for up to half a second, so that the client reads the answer
// before the connection ends.
func lingerClose(c net.Conn, br *bufio.Reader) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, br)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
