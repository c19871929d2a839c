package nats

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// hop is the consumers' link to the server: a TCP hop that reads NATS's
// text protocol from the client and hands every ack (a PUB or HPUB to a
// $JS.ACK subject) to the run's hook before the server sees it, so that a
// fault can hold an ack back while it kills the consumer (the effect done,
// the ack never arriving). What the server sends goes back untouched.
type hop struct {
	ln       net.Listener
	upstream string
	way      addrgate.Way

	mu    sync.Mutex
	hook  func(broker.Ack) bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startHop(ctx context.Context, g *addrgate.Gate, upstream string) (*hop, error) {
	ln, err := g.Listen(ctx, "", setting+" consumer link")
	if err != nil {
		return nil, err
	}
	h := &hop{ln: ln, upstream: upstream, way: g.For(setting), conns: map[net.Conn]struct{}{}}
	h.wg.Add(1)
	go h.accept()
	return h, nil
}

func (h *hop) addr() string { return h.ln.Addr().String() }

func (h *hop) setHook(f func(broker.Ack) bool) {
	h.mu.Lock()
	h.hook = f
	h.mu.Unlock()
}

func (h *hop) accept() {
	defer h.wg.Done()
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.serve(c)
		}()
	}
}

func (h *hop) track(c net.Conn, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if on {
		h.conns[c] = struct{}{}
	} else {
		delete(h.conns, c)
	}
}

func (h *hop) serve(client net.Conn) {
	up, err := h.way.DialContext(context.Background(), "tcp", h.upstream)
	if err != nil {
		_ = client.Close()
		return
	}
	h.track(client, true)
	h.track(up, true)
	defer func() {
		_ = client.Close()
		_ = up.Close()
		h.track(client, false)
		h.track(up, false)
	}()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(client, up)
		_ = client.Close()
		close(done)
	}()
	_ = h.relay(bufio.NewReader(client), up)
	_ = up.Close()
	<-done
}

// relay copies the client's protocol to the server op by op, stopping at
// an ack the hook drops (the link is cut there, as a dead consumer's is).
func (h *hop) relay(r *bufio.Reader, up net.Conn) error {
	w := bufio.NewWriter(up)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		op, payload := line, []byte(nil)
		if n, subj, ok := pubSize(line); ok {
			op = append([]byte(nil), line...)
			payload = make([]byte, n+2) // the payload and its CRLF
			if _, err := io.ReadFull(r, payload); err != nil {
				return err
			}
			if strings.HasPrefix(subj, "$JS.ACK.") {
				data := payload[:n]
				if bytes.HasPrefix(op, []byte("HPUB")) || bytes.HasPrefix(op, []byte("hpub")) {
					data = afterHeaders(data)
				}
				if a, ok := parseAck(subj, data); ok && !h.pass(a) {
					return errors.New("ack dropped")
				}
			}
		}
		if _, err := w.Write(op); err != nil {
			return err
		}
		if _, err := w.Write(payload); err != nil {
			return err
		}
		if r.Buffered() == 0 { // nothing more queued: send now
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

func (h *hop) pass(a broker.Ack) bool {
	h.mu.Lock()
	f := h.hook
	h.mu.Unlock()
	return f == nil || f(a)
}

// pubSize reads a PUB or HPUB line: the payload's size and the subject.
func pubSize(line []byte) (int, string, bool) {
	f := strings.Fields(string(line))
	if len(f) < 3 {
		return 0, "", false
	}
	switch strings.ToUpper(f[0]) {
	case "PUB", "HPUB":
	default:
		return 0, "", false
	}
	n, err := strconv.Atoi(f[len(f)-1]) // PUB's size, HPUB's total size
	if err != nil || n < 0 {
		return 0, "", false
	}
	return n, f[1], true
}

// afterHeaders is an HPUB payload's body, past its NATS/1.0 header block.
func afterHeaders(p []byte) []byte {
	if i := bytes.Index(p, []byte("\r\n\r\n")); i >= 0 {
		return p[i+4:]
	}
	return p
}

func (h *hop) close() {
	_ = h.ln.Close()
	h.mu.Lock()
	for c := range h.conns {
		_ = c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}
