// Package nats is the embedded NATS broker with JetStream: the real
// nats-server, in this process (as the in-process Toxiproxy is), its
// store in the run's own directory, listening on loopback only through the
// run's address gate. A program that imports it can run consumer
// scenarios with `broker: {kind: nats}`; the idemchaos command links it, a
// Go test links it with
//
//	import _ "github.com/idemchaos/idemchaos/harness/broker/nats"
//
// so that a test that imports only harness links no NATS server.
//
// What a consumer is given (see [Broker.Env]): the server's URL, the
// stream the harness publishes to (work-queue retention: a message
// leaves it once acknowledged), its subject, and a durable pull consumer
// the harness created, which every instance of the user's consumer binds
// to (competing consumers). The harness watches the acks the consumers
// send to the broker ($JS.ACK subjects) with the broker's own count of
// deliveries in each, so that a redelivery and an ack are facts the
// broker reported, not guesses.
//
// Exported API: [Start], [Broker], the environment variable names.
package nats

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

func init() {
	broker.Register(Kind, func(ctx context.Context, opts broker.Options) (broker.Broker, error) { return Start(ctx, opts) })
}

// Kind is the broker kind this package registers.
const Kind = "nats"

// The names a consumer finds in its environment, and their values.
const (
	EnvURL      = "IDEMCHAOS_NATS_URL"
	EnvStream   = "IDEMCHAOS_NATS_STREAM"
	EnvSubject  = "IDEMCHAOS_NATS_SUBJECT"
	EnvConsumer = "IDEMCHAOS_NATS_CONSUMER"

	Stream   = "IDEMCHAOS"
	Subject  = "idemchaos.messages"
	Consumer = "idemchaos"
)

// setting names the broker's listener and the harness's connection to it
// in the gate's messages.
const setting = "broker (nats)"

// readyWithin bounds the server's start: an embedded server that is not
// accepting connections by then never will.
const readyWithin = 10 * time.Second

// Broker is a started embedded NATS server with the stream and durable
// consumer of one run, and the harness's own connection to it.
type Broker struct {
	srv *server.Server
	nc  *natsgo.Conn
	js  jetstream.JetStream
	url string
	sub *natsgo.Subscription
	hop *hop

	// opts and srvOpts are what the server was started with, for a
	// restart in place; advisory watches the broker's max-deliveries
	// advisories.
	opts     broker.Options
	srvOpts  server.Options
	advisory *natsgo.Subscription
	// connMu is held for writing while a restart replaces the server and
	// the harness's connection: what uses them waits for the new ones.
	connMu sync.RWMutex

	mu   sync.Mutex
	acks []broker.Ack
	bad  error // an ack subject the harness could not read
	// fences are the markers [Broker.Acks] waits for, by subject.
	fences map[string]chan struct{}
	fenceN uint64
	// delivered is the broker's delivery count of each message it
	// delivered (from the deliveries' reply subjects), exhausted the
	// messages it gave up on (its max-deliveries advisory).
	delivered map[uint64]uint64
	exhausted map[uint64]bool

	closeOnce sync.Once
	closeErr  error
}

var (
	_ broker.Broker          = (*Broker)(nil)
	_ broker.DeliveryCounter = (*Broker)(nil)
	_ broker.Restarter       = (*Broker)(nil)
)

// Start starts the server with JetStream, its store under opts.Dir, and
// creates the run's stream and durable consumer.
func Start(ctx context.Context, opts broker.Options) (*Broker, error) {
	if opts.Dir == "" {
		return nil, errors.New("nats: no store directory (Options.Dir)")
	}
	listen, err := opts.Gate.ListenAddr(ctx, opts.Listen, setting)
	if err != nil {
		return nil, err
	}
	host, port, err := hostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("nats: listen %q: %w", listen, err)
	}
	so := server.Options{
		ServerName: "idemchaos",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   opts.Dir,
		NoLog:      true,
		NoSigs:     true, // the harness's own signal handling stays in charge
		// No monitoring, cluster, gateway, leaf or websocket listener:
		// one listener, the one the gate checked.
	}
	srv, err := startServer(so)
	if err != nil {
		return nil, err
	}
	b := &Broker{srv: srv, url: "nats://" + srv.Addr().String(), opts: opts, srvOpts: so,
		delivered: map[uint64]uint64{}, exhausted: map[uint64]bool{}}
	// A restart listens where this server did, on the port it was given.
	b.srvOpts.Port = srv.Addr().(*net.TCPAddr).Port
	if b.hop, err = startHop(ctx, opts.Gate, srv.Addr().String(), b.sawDelivery); err != nil {
		srv.Shutdown()
		return nil, fmt.Errorf("nats: consumer link: %w", err)
	}
	if err := b.connect(ctx, opts); err != nil {
		_ = b.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return b, nil
}

// startServer starts an embedded server and waits until it accepts
// connections.
func startServer(so server.Options) (*server.Server, error) {
	srv, err := server.NewServer(&so)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(readyWithin) {
		srv.Shutdown()
		return nil, fmt.Errorf("nats: the embedded server was not ready within %v", readyWithin)
	}
	return srv, nil
}

// hostPort splits a listen address; port 0 becomes the server's "any free
// port" (-1), since 0 means its default 4222 to it.
func hostPort(addr string) (string, int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, err
	}
	if n == 0 {
		n = server.RANDOM_PORT
	}
	return h, n, nil
}

// dialer is the harness's way to the broker: through the gate.
type dialer struct{ way addrgate.Way }

func (d dialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.way.DialContext(ctx, network, address)
}

// watch connects the harness to the server and subscribes its watches
// of the consumers' acks and of the broker's max-deliveries advisories.
func (b *Broker) watch(opts broker.Options) error {
	nc, err := natsgo.Connect(b.url, natsgo.Name("idemchaos"), natsgo.SetCustomDialer(dialer{opts.Gate.For(setting)}), natsgo.NoReconnect())
	if err != nil {
		return fmt.Errorf("nats: connect: %w", err)
	}
	b.nc = nc
	// The ack watch is subscribed before any consumer exists, so that no
	// ack is missed.
	if b.sub, err = nc.Subscribe("$JS.ACK.>", b.sawAck); err != nil {
		return fmt.Errorf("nats: watch acks: %w", err)
	}
	if b.advisory, err = nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+Stream+"."+Consumer, b.sawExhausted); err != nil {
		return fmt.Errorf("nats: watch advisories: %w", err)
	}
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("nats: watch acks: %w", err)
	}
	if b.js, err = jetstream.New(nc); err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	return nil
}

func (b *Broker) connect(ctx context.Context, opts broker.Options) error {
	if err := b.watch(opts); err != nil {
		return err
	}
	if _, err := b.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      Stream,
		Subjects:  []string{Subject},
		Retention: jetstream.WorkQueuePolicy,
		Storage:   jetstream.FileStorage,
		// JetStream's own dedupe window, over Nats-Msg-Id: what a
		// retrying producer's second publish with the same id meets.
		Duplicates: 2 * time.Minute,
	}); err != nil {
		return fmt.Errorf("nats: create stream %s: %w", Stream, err)
	}
	ackWait, maxDeliver := opts.AckWait, opts.MaxDeliver
	if ackWait <= 0 {
		ackWait = broker.DefaultAckWait
	}
	if maxDeliver <= 0 {
		maxDeliver = broker.DefaultMaxDeliver
	}
	if _, err := b.js.CreateOrUpdateConsumer(ctx, Stream, jetstream.ConsumerConfig{
		Durable:    Consumer,
		AckPolicy:  jetstream.AckExplicitPolicy,
		AckWait:    ackWait,
		MaxDeliver: maxDeliver,
	}); err != nil {
		return fmt.Errorf("nats: create consumer %s: %w", Consumer, err)
	}
	return nil
}

// sawAck records one ack the server received: its subject is the reply
// subject the broker gave the delivery, $JS.ACK.<stream>.<consumer>.
// <delivered>.<stream seq>.<consumer seq>.<time>.<pending> (v1), or with
// <domain>.<account hash> before the stream (v2).
func (b *Broker) sawAck(m *natsgo.Msg) {
	if strings.HasPrefix(m.Subject, fenceSubject+".") {
		b.mu.Lock()
		if ch, ok := b.fences[m.Subject]; ok {
			close(ch)
			delete(b.fences, m.Subject)
		}
		b.mu.Unlock()
		return
	}
	a, ok := parseAck(m.Subject, m.Data)
	if !ok {
		if ackKind(m.Data) != "" && strings.Contains(m.Subject, "."+Stream+"."+Consumer+".") {
			b.fail(fmt.Errorf("nats: ack subject %q: want $JS.ACK.<stream>.<consumer>.<delivered>.<seq>...", m.Subject))
		}
		return
	}
	a.At = time.Now()
	b.mu.Lock()
	b.acks = append(b.acks, a)
	b.mu.Unlock()
}

// parseAck reads an ack (or a nak) of the run's consumer from its subject
// and body; false for anything else (another consumer's, "in progress").
func parseAck(subject string, data []byte) (broker.Ack, bool) {
	kind := ackKind(data)
	if kind == "" {
		return broker.Ack{}, false
	}
	tok := strings.Split(subject, ".")
	var i int
	switch {
	case len(tok) == 9:
		i = 2
	case len(tok) >= 11:
		i = 4
	default:
		return broker.Ack{}, false
	}
	if tok[i] != Stream || tok[i+1] != Consumer {
		return broker.Ack{}, false
	}
	dc, err1 := strconv.ParseUint(tok[i+2], 10, 64)
	seq, err2 := strconv.ParseUint(tok[i+3], 10, 64)
	if err1 != nil || err2 != nil {
		return broker.Ack{}, false
	}
	return broker.Ack{Seq: seq, Delivered: dc, Kind: kind}, true
}

// ackKind reads an ack's body as the server does: empty or +ACK (and +NXT,
// an ack asking for the next message) acknowledge; +TERM ends the
// message's deliveries; -NAK asks for it again (a nak: it settles
// nothing); +WPI (in progress) is none of them.
func ackKind(data []byte) string {
	s := string(data)
	switch {
	case s == "" || strings.HasPrefix(s, "+ACK") || strings.HasPrefix(s, "+NXT"):
		return broker.AckKindAck
	case strings.HasPrefix(s, "+TERM"):
		return broker.AckKindTerm
	case strings.HasPrefix(s, "-NAK"):
		return broker.AckKindNak
	}
	return ""
}

// sawDelivery notes a delivery the server sent a consumer: the message's
// delivery count is the largest the broker gave it.
func (b *Broker) sawDelivery(seq, count uint64) {
	b.mu.Lock()
	b.delivered[seq] = max(b.delivered[seq], count)
	b.mu.Unlock()
}

// sawExhausted notes the broker's advisory that a message reached the
// consumer's MaxDeliver: the server will not deliver it again.
func (b *Broker) sawExhausted(m *natsgo.Msg) {
	var adv struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries uint64 `json:"deliveries"`
	}
	if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq == 0 {
		b.fail(fmt.Errorf("nats: max-deliveries advisory %q: %v", m.Data, err))
		return
	}
	b.mu.Lock()
	b.exhausted[adv.StreamSeq] = true
	b.delivered[adv.StreamSeq] = max(b.delivered[adv.StreamSeq], adv.Deliveries)
	b.mu.Unlock()
}

// Deliveries is the broker's count of deliveries of every message it
// delivered so far (the largest in a delivery's reply subject or a
// consumer's ack), exhausted when it sent its max-deliveries advisory
// and no ack or terminate settled the message. It first round-trips the
// harness's connection, as [Broker.Acks] does.
func (b *Broker) Deliveries(ctx context.Context) ([]broker.Delivery, error) {
	acks, err := b.Acks(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	counts := maps.Clone(b.delivered)
	settled := map[uint64]bool{}
	for _, a := range acks {
		counts[a.Seq] = max(counts[a.Seq], a.Delivered)
		settled[a.Seq] = settled[a.Seq] || a.Settles()
	}
	out := make([]broker.Delivery, 0, len(counts))
	for seq, n := range counts {
		d := broker.Delivery{Seq: seq, Count: n}
		if b.exhausted[seq] && !settled[seq] {
			d.Kind = broker.DeliveryExhausted
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y broker.Delivery) int { return cmp.Compare(x.Seq, y.Seq) })
	return out, nil
}

// Restart shuts the server down and starts a new one on the same port
// with the same store directory: JetStream's file store keeps the stream,
// the consumer and its delivery counts. The consumers' links are cut with
// the old server and wait, reconnecting, until the harness's watches are
// subscribed on the new one, so that no ack goes unseen. ~40 ms here.
func (b *Broker) Restart(ctx context.Context) error {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	b.hop.Hold.Pause()
	defer b.hop.Hold.Resume()
	b.nc.Close()
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
	srv, err := startServer(b.srvOpts)
	if err != nil {
		return fmt.Errorf("nats: restart: %w", err)
	}
	b.srv = srv
	if err := b.watch(b.opts); err != nil {
		return fmt.Errorf("nats: restart: %w", err)
	}
	return nil
}

func (b *Broker) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bad == nil {
		b.bad = err
	}
}

// Kind is "nats".
func (b *Broker) Kind() string { return Kind }

// URL is the server's nats:// URL on loopback.
func (b *Broker) URL() string { return b.url }

// Env is what a consumer is started with: the URL of its link to the
// server (the hop that [Broker.OnAck] watches), the stream, subject and
// durable consumer names.
func (b *Broker) Env() map[string]string {
	return map[string]string{EnvURL: "nats://" + b.hop.addr(), EnvStream: Stream, EnvSubject: Subject, EnvConsumer: Consumer}
}

// OnAck sets the hook every ack on the consumers' link meets before the
// server does (nil: none). It may block, holding that consumer's link;
// false drops the ack and cuts the link.
func (b *Broker) OnAck(f func(broker.Ack) bool) { b.hop.SetHook(f) }

// Publish publishes m to the stream with its intent and key headers (and
// Nats-Msg-Id when m has a dedupe id) and waits for JetStream's answer.
func (b *Broker) Publish(ctx context.Context, m broker.Message) (broker.Published, error) {
	msg := natsgo.NewMsg(Subject)
	msg.Header.Set(broker.HeaderIntent, m.Intent)
	msg.Header.Set(broker.HeaderKey, m.Key)
	msg.Data = m.Body
	var opts []jetstream.PublishOpt
	if m.DedupeID != "" {
		opts = append(opts, jetstream.WithMsgID(m.DedupeID))
	}
	b.connMu.RLock()
	defer b.connMu.RUnlock()
	ack, err := b.js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		return broker.Published{}, fmt.Errorf("nats: publish %s: %w", m.Intent, err)
	}
	return broker.Published{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// Acks lists the acks the broker received so far. It first round-trips
// the harness's connection, so that every ack the server routed before
// the call is in the list.
func (b *Broker) Acks(ctx context.Context) ([]broker.Ack, error) {
	if _, ok := ctx.Deadline(); !ok { // the client's flush wants one
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	if err := b.fence(ctx); err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]broker.Ack(nil), b.acks...), b.bad
}

// fenceSubject is under the ack subscription's subjects, and names no
// stream: the server routes it to the harness alone.
const fenceSubject = "$JS.ACK.idemchaos-fence"

// fence returns once the ack subscription's callback has taken every ack
// the server had routed to the harness before this call. A flush is not
// enough: it says the acks reached the harness's connection, while the
// callback runs on a goroutine of its own, and on a loaded machine an ack
// the consumer saw confirmed was still queued for it. The server delivers
// one connection's messages in order, and the callback takes them in
// order: a marker published now comes back after them.
func (b *Broker) fence(ctx context.Context) error {
	b.mu.Lock()
	b.fenceN++
	subject := fmt.Sprintf("%s.%d", fenceSubject, b.fenceN)
	ch := make(chan struct{})
	if b.fences == nil {
		b.fences = map[string]chan struct{}{}
	}
	b.fences[subject] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.fences, subject)
		b.mu.Unlock()
	}()
	b.connMu.RLock()
	err := b.nc.Publish(subject, nil)
	if err == nil {
		err = b.nc.FlushWithContext(ctx)
	}
	b.connMu.RUnlock()
	if err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the acks routed to the harness were not all taken: %w", ctx.Err())
	}
}

// Pending is how many messages the stream still holds: with work-queue
// retention, those no consumer has acknowledged yet.
func (b *Broker) Pending(ctx context.Context) (uint64, error) {
	b.connMu.RLock()
	defer b.connMu.RUnlock()
	s, err := b.js.Stream(ctx, Stream)
	if err != nil {
		return 0, fmt.Errorf("nats: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("nats: %w", err)
	}
	return info.State.Msgs, nil
}

// Close closes the harness's connection and shuts the server down,
// waiting until it has.
func (b *Broker) Close(ctx context.Context) error {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	b.closeOnce.Do(func() {
		if b.nc != nil {
			b.nc.Close()
		}
		if b.hop != nil {
			b.hop.Close()
		}
		b.srv.Shutdown()
		done := make(chan struct{})
		go func() { b.srv.WaitForShutdown(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			b.closeErr = fmt.Errorf("nats: shutdown: %w", ctx.Err())
		}
	})
	return b.closeErr
}
