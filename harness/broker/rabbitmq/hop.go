package rabbitmq

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// hop is the consumers' link to the node: a TCP hop that reads AMQP 0-9-1
// frames both ways. From the node it learns what each delivery tag of
// each channel is (basic.deliver, then the content header's headers: the
// harness's stored-copy number and the quorum queue's x-delivery-count);
// from the consumer it takes every basic.ack (and reject or nack) to the
// run's hook before the node sees it, so that a fault can hold an ack back
// while it kills the consumer. Every frame goes on as the bytes it came as.
type hop struct {
	ln       net.Listener
	upstream string
	way      addrgate.Way

	// Links are its listener, connections, ack hook and restart hold.
	broker.Links

	mu   sync.Mutex
	acks []broker.Ack // what went on to the node, in order
	bad  error        // a delivery the hop could not place
	// delivered is the node's delivery count of each message it delivered
	// (x-delivery-count, plus this delivery), by stored copy.
	delivered map[uint64]uint64
	// settling is held (read) while a settlement goes on to the node and
	// is recorded: the node may count it before the hop has written it
	// down, and [hop.list] waits for it (write) so that what the node no
	// longer holds is on the list.
	settling sync.RWMutex
}

func startHop(ctx context.Context, g *addrgate.Gate, upstream string) (*hop, error) {
	ln, err := g.Listen(ctx, "", setting+" consumer link")
	if err != nil {
		return nil, err
	}
	h := &hop{ln: ln, upstream: upstream, way: g.For(setting)}
	h.Serve(ln, h.serve)
	return h, nil
}

func (h *hop) addr() string { return h.ln.Addr().String() }

// link is one consumer connection's state: per channel, the deliveries
// not settled yet, by tag.
type link struct {
	mu      sync.Mutex
	open    map[uint16]map[uint64]delivery
	pending map[uint16]deliver // a basic.deliver whose content header is next
	// noAck holds, per channel, the consumer tags that said no-ack;
	// consumes and gets are the no-ack flags of the basic.consumes and
	// basic.gets the node has not answered yet, in order.
	noAck    map[uint16]map[string]bool
	consumes map[uint16][]bool
	gets     map[uint16][]bool
	// settled: a settlement went on to the node; closing: the consumer
	// sent its own connection.close.
	settled, closing bool
}

// settledUnclosed tells whether the link forwarded a settlement and the
// consumer never closed its connection itself.
func (l *link) settledUnclosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.settled && !l.closing
}

func newLink() *link {
	return &link{open: map[uint16]map[uint64]delivery{}, pending: map[uint16]deliver{},
		noAck: map[uint16]map[string]bool{}, consumes: map[uint16][]bool{}, gets: map[uint16][]bool{}}
}

// delivery is what a tag stands for.
type delivery struct {
	seq       uint64 // the stored copy (header [HeaderSeq])
	delivered uint64 // the broker's count of deliveries, this one included
}

func (h *hop) serve(client net.Conn) {
	if !h.Hold.Wait(h.Done()) {
		_ = client.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	up, err := h.way.DialContext(ctx, "tcp", h.upstream)
	cancel()
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
	l := newLink()
	done := make(chan struct{})
	go func() {
		h.fromNode(l, bufio.NewReader(up), client)
		_ = client.Close()
		close(done)
	}()
	err = h.fromConsumer(l, bufio.NewReader(client), up)
	if errors.Is(err, errAckDropped) {
		_ = up.Close() // the ack never left: what the node sees of a dead consumer
	} else if l.settledUnclosed() {
		// The consumer died with settlements the hop forwarded (and
		// recorded) maybe still unread by its channels: a node that sees
		// the socket end kills the channel processes, and acks in their
		// mailboxes are lost — the message comes again although the
		// history says it was acknowledged (CI's red: kill-after-ack's
		// target delivered twice under load). A connection.close is
		// handled after every frame before it on the connection, and
		// the node closes the socket once its close-ok is sent.
		if _, werr := up.Write(connectionClose("idemchaos: the consumer is gone")); werr == nil {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
			}
		}
	} else if tc, ok := up.(*net.TCPConn); ok {
		// The consumer is gone after its last frame: a FIN after that
		// frame (an ack, for kill-after-ack) lets the node read it before
		// it sees the connection end. A close with the node's frames
		// unread would be a reset, which may discard it.
		_ = tc.CloseWrite()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}
	_ = up.Close()
	<-done
}

// fromNode copies the node's frames to the consumer, noting each delivery
// before the consumer can see it (so before it can ack it). A delivery to
// a no-ack consumer is settled as the node sends it: it meets the hook
// there, before the consumer has it whole. Once the consumer is gone the
// hop reads on to the node's end of the connection.
func (h *hop) fromNode(l *link, r *bufio.Reader, client net.Conn) {
	w := bufio.NewWriter(client)
	gone := false
	for {
		f, err := readFrame(r)
		if err != nil {
			return
		}
		if a, ok := l.fromNode(h, f); ok {
			if !h.Pass(a) {
				_ = client.Close()
				gone = true
			}
			h.record([]broker.Ack{a}) // the node forgot it as it sent it
		}
		if gone {
			continue
		}
		if _, err := w.Write(f.raw); err != nil {
			gone = true
			continue
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				gone = true
			}
		}
	}
}

// fromNode notes f; a delivery a no-ack consumer received whole (its
// content header read) comes back as the ack it is.
func (l *link) fromNode(h *hop, f frame) (broker.Ack, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch f.typ {
	case frameMethod:
		class, method, args, _ := f.method()
		switch {
		case class == classBasic && (method == methodBasicDeliver || method == methodBasicGetOK):
			d, err := parseDeliver(method, args)
			if err != nil {
				h.fail(err)
				return broker.Ack{}, false
			}
			if method == methodBasicGetOK {
				d.noAck = l.popGet(f.channel)
			} else {
				d.noAck = l.noAck[f.channel][d.consumer]
			}
			l.pending[f.channel] = d
		case class == classBasic && method == methodBasicGetEmpty:
			l.popGet(f.channel)
		case class == classBasic && method == methodBasicConsumeOK:
			r := &reader{b: args}
			tag := r.shortstr()
			if q := l.consumes[f.channel]; len(q) > 0 {
				if q[0] {
					if l.noAck[f.channel] == nil {
						l.noAck[f.channel] = map[string]bool{}
					}
					l.noAck[f.channel][tag] = true
				}
				l.consumes[f.channel] = q[1:]
			}
		case class == classChannel && (method == methodChannelClose || method == methodChannelCloseOK):
			// The node settles a closed channel's deliveries itself
			// (it requeues them): none of its tags can be acked again.
			delete(l.open, f.channel)
			delete(l.pending, f.channel)
			delete(l.noAck, f.channel)
			delete(l.consumes, f.channel)
			delete(l.gets, f.channel)
		}
	case frameHeader:
		d, ok := l.pending[f.channel]
		if !ok {
			return broker.Ack{}, false
		}
		delete(l.pending, f.channel)
		hdrs, err := headersOf(f.payload)
		if err != nil {
			h.fail(fmt.Errorf("rabbitmq: delivery %d on channel %d: %w", d.tag, f.channel, err))
			return broker.Ack{}, false
		}
		seq, ok := intOf(hdrs[HeaderSeq])
		if !ok {
			return broker.Ack{}, false // not a message the harness published
		}
		// A quorum queue counts the deliveries before this one in
		// x-delivery-count (absent the first time); a classic queue has
		// only the redelivered flag.
		n := uint64(1)
		if c, ok := intOf(hdrs["x-delivery-count"]); ok {
			n = uint64(c) + 1
		} else if d.redelivered {
			n = 2
		}
		h.sawDelivery(uint64(seq), n)
		if d.noAck {
			return broker.Ack{Seq: uint64(seq), Delivered: n, Kind: "ack"}, true
		}
		if l.open[f.channel] == nil {
			l.open[f.channel] = map[uint64]delivery{}
		}
		l.open[f.channel][d.tag] = delivery{seq: uint64(seq), delivered: n}
	}
	return broker.Ack{}, false
}

func (l *link) popGet(ch uint16) bool {
	q := l.gets[ch]
	if len(q) == 0 {
		return false
	}
	l.gets[ch] = q[1:]
	return q[0]
}

// fromConsumer copies the consumer's frames to the node op by op. A
// settlement meets the hook first, once per message it settles; one the
// hook drops cuts the link there, as a dead consumer's is.
func (h *hop) fromConsumer(l *link, r *bufio.Reader, up net.Conn) error {
	w := bufio.NewWriter(up)
	head := make([]byte, len(protocolHeader))
	if _, err := io.ReadFull(r, head); err != nil {
		return err
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for {
		f, err := readFrame(r)
		if err != nil {
			return err
		}
		acks, tags := l.settlement(h, f)
		for _, a := range acks {
			if !h.Pass(a) {
				return errAckDropped
			}
		}
		if err := h.forward(l, w, f, r.Buffered() == 0, acks, tags); err != nil {
			return err
		}
	}
}

// forward writes f on to the node, and records the settlements it carries
// once they went: both under settling.
func (h *hop) forward(l *link, w *bufio.Writer, f frame, idle bool, acks []broker.Ack, tags []uint64) error {
	if len(tags) > 0 {
		h.settling.RLock()
		defer h.settling.RUnlock()
	}
	if _, err := w.Write(f.raw); err != nil {
		return err
	}
	if idle || len(tags) > 0 {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(tags) > 0 {
		l.forget(f.channel, tags)
		h.record(acks)
	}
	if class, method, _, ok := f.method(); ok && f.channel == 0 && class == classConnection && method == methodConnectionClose {
		l.mu.Lock()
		l.closing = true
		l.mu.Unlock()
	}
	return nil
}

var errAckDropped = errors.New("rabbitmq: ack dropped")

// settlement reads f as a settlement, as [broker.Ack]s (acks; rejects and
// nacks without requeue as terms, with requeue as naks), and every tag it
// settles.
func (l *link) settlement(h *hop, f frame) ([]broker.Ack, []uint64) {
	class, method, args, ok := f.method()
	if !ok || class != classBasic || (method != methodBasicAck && method != methodBasicReject && method != methodBasicNack) {
		l.fromConsumer(h, f)
		return nil, nil
	}
	s, err := parseSettle(method, args)
	if err != nil {
		h.fail(err)
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	open := l.open[f.channel]
	var tags []uint64
	if s.multiple {
		for t := range open {
			if s.tag == 0 || t <= s.tag {
				tags = append(tags, t)
			}
		}
		slices.Sort(tags)
	} else if _, ok := open[s.tag]; ok {
		tags = []uint64{s.tag}
	}
	var acks []broker.Ack
	kind := broker.AckKindAck
	switch {
	case !s.final:
		kind = broker.AckKindNak // requeued: the node delivers it again
	case !s.ack:
		kind = broker.AckKindTerm
	}
	for _, t := range tags {
		d := open[t]
		acks = append(acks, broker.Ack{Seq: d.seq, Delivered: d.delivered, Kind: kind})
	}
	return acks, tags
}

// fromConsumer notes the consumer's frames other than settlements: a
// channel opened again, and the no-ack flag of each consume and get.
func (l *link) fromConsumer(h *hop, f frame) {
	class, method, args, ok := f.method()
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case class == classChannel && method == methodChannelOpen:
		delete(l.open, f.channel) // a new channel's tags start at 1 again
		delete(l.noAck, f.channel)
	case class == classBasic && (method == methodBasicConsume || method == methodBasicGet):
		noAck, err := parseNoAck(method, args)
		if err != nil {
			h.fail(err)
			return
		}
		if method == methodBasicConsume {
			l.consumes[f.channel] = append(l.consumes[f.channel], noAck)
		} else {
			l.gets[f.channel] = append(l.gets[f.channel], noAck)
		}
	}
}

func (l *link) forget(ch uint16, tags []uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range tags {
		delete(l.open[ch], t)
	}
	l.settled = true
}

func (h *hop) record(acks []broker.Ack) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range acks {
		a.At = now
		h.acks = append(h.acks, a)
	}
}

// sawDelivery notes a delivery the node sent a consumer: the message's
// delivery count is the largest the node gave it.
func (h *hop) sawDelivery(seq, n uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.delivered == nil {
		h.delivered = map[uint64]uint64{}
	}
	h.delivered[seq] = max(h.delivered[seq], n)
}

// deliveries is the largest delivery count of each message delivered.
func (h *hop) deliveries() map[uint64]uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.delivered)
}

func (h *hop) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bad == nil {
		h.bad = err
	}
}

func (h *hop) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acks, h.bad, h.delivered = nil, nil, nil
}

func (h *hop) list() ([]broker.Ack, error) {
	h.settling.Lock() // a settlement on its way is written down first
	h.settling.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.acks), h.bad
}
