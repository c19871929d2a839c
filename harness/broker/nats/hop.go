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

	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// hop is the consumers' link to the server: a TCP hop that reads NATS's
// text protocol from the client and hands every ack (a PUB or HPUB to a
// $JS.ACK subject) to the run's hook before the server sees it, so that a
// fault can hold an ack back while it kills the consumer (the effect done,
// the ack never arriving). What the server sends goes back untouched, read
// on the way for the reply subject of each delivery (MSG or HMSG), whose
// $JS.ACK tokens carry the broker's count of that message's deliveries.
type hop struct {
	ln       net.Listener
	upstream string
	way      addrgate.Way
	// delivered receives the stream sequence and delivery count of each
	// delivery the server sends a consumer.
	delivered func(seq, count uint64)

	// Links are its listener, connections, ack hook and restart hold.
	broker.Links
}

func startHop(ctx context.Context, g *addrgate.Gate, upstream string, delivered func(seq, count uint64)) (*hop, error) {
	ln, err := g.Listen(ctx, "", setting+" consumer link")
	if err != nil {
		return nil, err
	}
	h := &hop{ln: ln, upstream: upstream, way: g.For(setting), delivered: delivered}
	h.Serve(ln, h.serve)
	return h, nil
}

func (h *hop) addr() string { return h.ln.Addr().String() }

func (h *hop) serve(client net.Conn) {
	if !h.Hold.Wait(h.Done()) {
		_ = client.Close()
		return
	}
	up, err := h.way.DialContext(context.Background(), "tcp", h.upstream)
	if err != nil {
		_ = client.Close()
		return
	}
	h.Track(client, true)
	h.Track(up, true)
	defer func() {
		_ = client.Close()
		_ = up.Close()
		h.Track(client, false)
		h.Track(up, false)
	}()
	done := make(chan struct{})
	go func() {
		_ = h.deliver(bufio.NewReader(up), client)
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
				if a, ok := parseAck(subj, data); ok {
					// What came before the ack goes on before the hook
					// may hold it: an earlier ack the run waits to see
					// must not wait behind this one.
					if err := w.Flush(); err != nil {
						return err
					}
					if !h.Pass(a) {
						return errors.New("ack dropped")
					}
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

// deliver copies the server's protocol to the client, noting the reply
// subject of every MSG and HMSG on the way.
func (h *hop) deliver(r *bufio.Reader, client net.Conn) error {
	w := bufio.NewWriter(client)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
		if _, werr := w.Write(line); werr != nil {
			return werr
		}
		if err == nil {
			if n, reply, ok := msgSize(line); ok {
				if seq, count, ok := replyCount(reply); ok && h.delivered != nil {
					h.delivered(seq, count)
				}
				if _, err := io.CopyN(w, r, int64(n)+2); err != nil { // the payload and its CRLF
					return err
				}
			}
		}
		if r.Buffered() == 0 { // nothing more queued: send now
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

// msgSize reads a MSG or HMSG line: the payload's total size and the
// reply subject ("" when it has none).
func msgSize(line []byte) (int, string, bool) {
	f := strings.Fields(string(line))
	var reply string
	switch {
	case len(f) < 4:
		return 0, "", false
	case strings.EqualFold(f[0], "MSG"):
		// MSG <subject> <sid> [reply-to] <#bytes>
		if len(f) == 5 {
			reply = f[3]
		}
	case strings.EqualFold(f[0], "HMSG"):
		// HMSG <subject> <sid> [reply-to] <#header bytes> <#total bytes>
		if len(f) == 6 {
			reply = f[3]
		}
	default:
		return 0, "", false
	}
	n, err := strconv.Atoi(f[len(f)-1])
	if err != nil || n < 0 {
		return 0, "", false
	}
	return n, reply, true
}

// replyCount reads the run's consumer's delivery count and stream
// sequence from a delivery's reply subject.
func replyCount(reply string) (seq, count uint64, ok bool) {
	if !strings.HasPrefix(reply, "$JS.ACK.") {
		return 0, 0, false
	}
	a, ok := parseAck(reply, nil)
	return a.Seq, a.Delivered, ok
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
