package redis

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// hop is the consumers' link to redis-server: a TCP hop that reads RESP
// both ways. Every XACK of the run's stream and group is handed to the
// run's hook before the server sees it (so that a fault can hold it back
// while it kills the consumer: the effect done, the ack never arriving),
// and is recorded as an ack only once the server's reply says it
// acknowledged the entry. Everything else goes through untouched.
//
// Replies come back in the order of the commands on one connection, so
// the hop pairs each reply with its command; inside MULTI an XACK's reply
// is +QUEUED and its count comes in EXEC's array. A connection that turns
// to push mode (SUBSCRIBE, MONITOR, CLIENT REPLY) breaks that pairing:
// from then on its XACKs are recorded as they are forwarded.
type hop struct {
	upstream string
	way      addrgate.Way
	gate     *addrgate.Gate
	stream   string
	group    string
	// lookup turns an XACK's entry ids into the acks they would be, with
	// the broker's count of deliveries (asked before the XACK goes on,
	// since an acknowledged entry leaves the pending list and its count
	// with it); ids the harness did not publish are left out.
	lookup func(ctx context.Context, ids []string) []broker.Ack
	// confirm records acks the server answered for: n is the count its
	// reply gave (how many of them it acknowledged).
	confirm func(acks []broker.Ack, n int64)
	// orphan takes the acks of XACKs that went on and got no reply (the
	// server died under them): whether the server applied them is read
	// back once it is up again.
	orphan func(acks []broker.Ack)

	// Links are its listeners, connections, ack hook and restart hold.
	broker.Links

	mu  sync.Mutex
	lns map[int]net.Listener // by link: 0 the shared one, i+1 instance i's
}

// settleAcks bounds the wait, after a consumer's side of a link closed,
// for the server's replies to the XACKs it sent last: a consumer killed
// right after its XACK left still has that ack applied and recorded.
const settleAcks = 10 * time.Second

func startHop(ctx context.Context, g *addrgate.Gate, h *hop) error {
	h.way, h.gate, h.lns = g.For(setting), g, map[int]net.Listener{}
	_, err := h.listen(ctx, 0)
	return err
}

// listen opens link's listener (once) and returns its address.
func (h *hop) listen(ctx context.Context, link int) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ln, ok := h.lns[link]; ok {
		return ln.Addr().String(), nil
	}
	select {
	case <-h.Done():
		return "", errors.New("the consumer link is closed")
	default:
	}
	ln, err := h.gate.Listen(ctx, "", setting+" consumer link")
	if err != nil {
		return "", err
	}
	h.lns[link] = ln
	h.Serve(ln, func(c net.Conn) { h.serve(c, link) })
	return ln.Addr().String(), nil
}

func (h *hop) addr(link int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lns[link].Addr().String()
}

// link is one consumer connection through the hop.
type link struct {
	h          *hop
	n          int // the link's number (see hop.lns)
	client, up net.Conn

	mu        sync.Mutex
	expects   []expect // commands whose replies are due, in order
	untracked bool
	acksOut   int           // XACKs and EXECs among them
	popped    chan struct{} // a reply to one of those arrived
	upDone    chan struct{} // the server's side ended
}

// expect is a command whose reply is due.
type expect struct {
	cmd  string       // its name, upper case
	acks []broker.Ack // an XACK's acks of the run's entries
}

func (h *hop) serve(client net.Conn, n int) {
	if !h.Hold.Wait(h.Done()) {
		_ = client.Close()
		return
	}
	up, err := h.way.DialContext(context.Background(), "tcp", h.upstream)
	if err != nil {
		_ = client.Close() // the server is down: the client dials again
		return
	}
	l := &link{h: h, n: n, client: client, up: up, popped: make(chan struct{}, 1), upDone: make(chan struct{})}
	h.Track(client, true)
	h.Track(up, true)
	defer func() {
		_ = client.Close()
		_ = up.Close()
		h.Track(client, false)
		h.Track(up, false)
	}()
	go l.replies()
	if err := l.commands(); !errors.Is(err, errDropped) {
		l.settle()
	}
	_ = up.Close()
	_ = client.Close()
	<-l.upDone
	l.orphans()
}

// orphans hands over the acks of XACKs sent on and never answered.
func (l *link) orphans() {
	l.mu.Lock()
	var acks []broker.Ack
	for _, e := range l.expects {
		acks = append(acks, e.acks...)
	}
	l.expects = nil
	l.mu.Unlock()
	if len(acks) > 0 {
		l.h.orphan(acks)
	}
}

// errDropped: the hook dropped an ack, and the link is cut there.
var errDropped = errors.New("ack dropped")

// pushModes are the commands after which a connection's replies no longer
// pair one to one with its commands.
var pushModes = map[string]bool{"SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true, "MONITOR": true, "SYNC": true, "PSYNC": true}

// commands relays the client's commands to the server one by one,
// stopping at an ack the hook drops.
func (l *link) commands() error {
	rr := newRespReader(l.client)
	w := bufio.NewWriter(l.up)
	for {
		args, raw, err := rr.command()
		if err != nil {
			return err
		}
		if len(args) > 0 {
			e := expect{cmd: strings.ToUpper(args[0])}
			if e.cmd == "XACK" && len(args) > 3 && args[1] == l.h.stream && args[2] == l.h.group {
				e.acks = l.h.lookup(context.Background(), args[3:])
				for _, a := range e.acks {
					if !l.h.Pass(a) {
						return errDropped
					}
				}
			}
			if pushModes[e.cmd] || (e.cmd == "CLIENT" && len(args) > 1 && strings.EqualFold(args[1], "REPLY")) {
				l.mu.Lock()
				l.untracked = true
				l.mu.Unlock()
			}
			l.push(e)
		}
		if _, err := w.Write(raw); err != nil {
			return err
		}
		if !rr.buffered() { // nothing more queued: send now
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

// push queues e's reply, or, on an untracked connection, records its acks
// as they go.
func (l *link) push(e expect) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.untracked {
		if len(e.acks) > 0 {
			l.h.confirm(e.acks, int64(len(e.acks)))
		}
		return
	}
	if e.cmd == "XACK" || e.cmd == "EXEC" {
		l.acksOut++
	}
	l.expects = append(l.expects, e)
}

func (l *link) pop() (expect, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.untracked || len(l.expects) == 0 {
		return expect{}, false
	}
	e := l.expects[0]
	l.expects = l.expects[1:]
	if e.cmd == "XACK" || e.cmd == "EXEC" {
		l.acksOut--
		select {
		case l.popped <- struct{}{}:
		default:
		}
	}
	return e, true
}

// settle waits, bounded, until the replies to the XACKs (and EXECs)
// already sent have come back, so that their acks are recorded.
func (l *link) settle() {
	deadline := time.NewTimer(settleAcks)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		out := l.acksOut
		l.mu.Unlock()
		if out <= 0 {
			return
		}
		select {
		case <-l.popped:
		case <-l.upDone:
			return
		case <-deadline.C:
			return
		}
	}
}

// replies relays the server's replies to the client and records the acks
// they confirm. It keeps reading after the client is gone: the reply to a
// killed consumer's last XACK still says whether the broker applied it.
func (l *link) replies() {
	defer close(l.upDone)
	defer func() { _ = l.client.Close() }()
	rr := newRespReader(l.up)
	w := bufio.NewWriter(l.client)
	clientUp := true
	var txn [][]broker.Ack // the acks of each command queued in MULTI
	inTxn := false
	for {
		v, raw, err := rr.reply()
		if err != nil {
			return
		}
		// The acks a reply confirms are recorded before the reply is
		// relayed, so a client that saw its XACK (or EXEC) answered finds
		// the ack in Acks. RESP3 push data is out of band.
		if v.kind != '>' {
			if e, ok := l.pop(); ok {
				inTxn, txn = l.track(e, v, inTxn, txn)
			}
		}
		if clientUp {
			if _, err := w.Write(raw); err != nil {
				clientUp = false
			} else if !rr.buffered() && w.Flush() != nil {
				clientUp = false
			}
		}
	}
}

// track does a reply's bookkeeping for the command it answers: a
// transaction's queued XACKs, and the acks the server confirmed.
func (l *link) track(e expect, v value, inTxn bool, txn [][]broker.Ack) (bool, [][]broker.Ack) {
	switch {
	case e.cmd == "MULTI":
		inTxn, txn = v.kind == '+', nil
	case e.cmd == "EXEC":
		if inTxn && v.kind == '*' && len(v.elems) == len(txn) {
			for i, acks := range txn {
				if len(acks) > 0 && v.elems[i].kind == ':' {
					l.h.confirm(acks, v.elems[i].num)
				}
			}
		}
		inTxn, txn = false, nil
	case e.cmd == "DISCARD" || e.cmd == "RESET":
		inTxn, txn = false, nil
	case inTxn:
		if v.kind == '+' && v.str == "QUEUED" {
			txn = append(txn, e.acks)
		}
	case len(e.acks) > 0 && v.kind == ':':
		l.h.confirm(e.acks, v.num)
	}
	return inTxn, txn
}
