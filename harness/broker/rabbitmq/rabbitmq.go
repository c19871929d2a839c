package rabbitmq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemchaos/idemchaos/harness/broker"
)

func init() {
	broker.Register(Kind, func(ctx context.Context, opts broker.Options) (broker.Broker, error) { return Start(ctx, opts) })
}

// Kind is the broker kind this package registers.
const Kind = "rabbitmq"

// The names a consumer finds in its environment, the queue it names, and
// the header of the harness's stored-copy number.
const (
	EnvURL   = "IDEMCHAOS_AMQP_URL"
	EnvQueue = "IDEMCHAOS_AMQP_QUEUE"

	Queue = "idemchaos"
	// DeadQueue is where the node dead-letters what leaves [Queue]
	// unacknowledged: a message rejected without requeue, and one
	// returned more than the delivery limit.
	DeadQueue = "idemchaos.dead"

	// HeaderSeq numbers each message the node stored (1, 2, ...: the
	// publisher-confirm sequence of the harness's channel): two copies
	// of one intent, which the node cannot tell apart, are two numbers.
	HeaderSeq = "Idemchaos-Seq"
)

// setting names the node's listeners and the harness's connections to it
// in the gate's messages.
const setting = "broker (rabbitmq)"

// minConsumerTimeout is the shortest consumer_timeout the node is given.
// The node checks the timeout once a minute (measured on 3.10: a 1 s
// consumer_timeout closed a stuck consumer's channel after 60 s), so a
// shorter one is no shorter wait: it would only make that check cut off a
// consumer that is merely slow on a loaded machine.
const minConsumerTimeout = time.Minute

// Broker is a started throwaway RabbitMQ node with the run's queue, the
// harness's own connection to it, and the consumers' hop.
type Broker struct {
	node *node
	url  string
	conn *amqp.Connection
	hop  *hop

	opts broker.Options // as started, for the connection a restart makes again

	// pubMu guards conn and ch (a restart replaces them).
	pubMu      sync.Mutex
	ch         *amqp.Channel // in confirm mode
	maxDeliver int
	// dead holds the stored copies the node dead-lettered past their
	// delivery limit (read from [DeadQueue]).
	dead map[uint64]bool

	closeOnce sync.Once
	closeErr  error
}

var (
	_ broker.Broker          = (*Broker)(nil)
	_ broker.DedupeNamer     = (*Broker)(nil)
	_ broker.DeliveryCounter = (*Broker)(nil)
	_ broker.Restarter       = (*Broker)(nil)
)

// Start starts a node under opts.Dir (its directories, configuration,
// cookie and log: node.log), with its AMQP listener at opts.Listen (a free
// loopback port by default), declares the run's quorum queue, and opens
// the consumers' hop.
func Start(ctx context.Context, opts broker.Options) (*Broker, error) {
	if opts.Dir == "" {
		return nil, errors.New("rabbitmq: no directory (Options.Dir)")
	}
	listen, err := opts.Gate.ListenAddr(ctx, opts.Listen, setting)
	if err != nil {
		return nil, err
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: listen %q: %w", listen, err)
	}
	ackWait := opts.AckWait
	if ackWait <= 0 {
		ackWait = broker.DefaultAckWait
	}
	n, err := startNode(ctx, opts.Gate, nodeSpec{dir: opts.Dir, host: host, port: port, consumerTimout: ackWait})
	if err != nil {
		return nil, err
	}
	b := &Broker{node: n, url: "amqp://guest:guest@" + n.amqp + "/", dead: map[uint64]bool{}, opts: opts}
	if b.hop, err = startHop(ctx, opts.Gate, n.amqp); err != nil {
		_ = n.stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("rabbitmq: consumer link: %w", err)
	}
	if err := b.connect(ctx, opts); err != nil {
		_ = b.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return b, nil
}

func (b *Broker) connect(ctx context.Context, opts broker.Options) error {
	way := opts.Gate.For(setting)
	conn, err := amqp.DialConfig(b.url, amqp.Config{
		Properties: amqp.Table{"connection_name": "idemchaos"},
		Dial: func(network, addr string) (net.Conn, error) {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return way.DialContext(dctx, network, addr)
		},
	})
	if err != nil {
		return fmt.Errorf("rabbitmq: connect: %w", err)
	}
	b.conn = conn
	if b.ch, err = conn.Channel(); err != nil {
		return fmt.Errorf("rabbitmq: channel: %w", err)
	}
	if err := b.ch.Confirm(false); err != nil {
		return fmt.Errorf("rabbitmq: publisher confirms: %w", err)
	}
	b.maxDeliver = opts.MaxDeliver
	if b.maxDeliver <= 0 {
		b.maxDeliver = broker.DefaultMaxDeliver
	}
	return b.declare()
}

func (b *Broker) declare() error {
	if _, err := b.ch.QueueDeclare(DeadQueue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("rabbitmq: declare queue %s: %w", DeadQueue, err)
	}
	if _, err := b.ch.QueueDeclare(Queue, true, false, false, false, amqp.Table{
		"x-queue-type": "quorum",
		// A message returned more often than this is dead-lettered (at
		// its limit+1st delivery, measured on 3.10): MaxDeliver
		// deliveries at most, so a poison message cannot hold the run,
		// and where it went is the node's own record that it gave up.
		"x-delivery-limit":          int64(b.maxDeliver - 1),
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": DeadQueue,
	}); err != nil {
		return fmt.Errorf("rabbitmq: declare queue %s: %w", Queue, err)
	}
	return nil
}

// Deliveries is the node's count of deliveries of every message it
// delivered (x-delivery-count in each delivery's headers), dead-lettered
// when the node moved it to [DeadQueue] past its delivery limit (x-death
// reason delivery_limit). The dead-letter queue is drained into the
// broker's record as it is read.
func (b *Broker) Deliveries(context.Context) ([]broker.Delivery, error) {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	for {
		m, ok, err := b.ch.Get(DeadQueue, true)
		if err != nil {
			return nil, fmt.Errorf("rabbitmq: read %s: %w", DeadQueue, err)
		}
		if !ok {
			break
		}
		seq, ok := intOf(m.Headers[HeaderSeq])
		if ok && deathReason(m.Headers) == "delivery_limit" {
			b.dead[uint64(seq)] = true
		}
	}
	counts := b.hop.deliveries()
	out := make([]broker.Delivery, 0, len(counts))
	for seq, n := range counts {
		d := broker.Delivery{Seq: seq, Count: n}
		if b.dead[seq] {
			d.Kind = broker.DeliveryDeadLettered
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y broker.Delivery) int { return cmp.Compare(x.Seq, y.Seq) })
	return out, nil
}

// deathReason is the reason of a dead-lettered message's latest death
// (its x-death header's first entry).
func deathReason(h amqp.Table) string {
	deaths, _ := h["x-death"].([]any)
	if len(deaths) == 0 {
		return ""
	}
	d, _ := deaths[0].(amqp.Table)
	r, _ := d["reason"].(string)
	return r
}

// Reset empties the queue (deleted and declared again) and forgets the
// settlements seen so far, so that one node serves several runs in turn:
// a node starts in seconds, a reset takes milliseconds. No consumer may
// be connected meanwhile.
func (b *Broker) Reset(context.Context) error {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	for _, q := range []string{Queue, DeadQueue} {
		if _, err := b.ch.QueueDelete(q, false, false, false); err != nil {
			return fmt.Errorf("rabbitmq: delete queue %s: %w", q, err)
		}
	}
	clear(b.dead)
	if err := b.declare(); err != nil {
		return err
	}
	b.hop.reset()
	return nil
}

// DedupeName is where the dedupe id travels: the AMQP message_id, which
// RabbitMQ stores and never compares.
func (b *Broker) DedupeName() string { return "message_id" }

// Kind is "rabbitmq".
func (b *Broker) Kind() string { return Kind }

// URL is the node's amqp:// URL on loopback (the harness's way in, not the
// consumers').
func (b *Broker) URL() string { return b.url }

// Node is the node's Erlang name (idemchaos-<hex>@localhost), which every
// process of the node carries in its environment as RABBITMQ_NODENAME.
func (b *Broker) Node() string { return b.node.name }

// Env is what a consumer is started with: the URL of its link to the node
// (the hop [Broker.OnAck] watches) and the queue.
func (b *Broker) Env() map[string]string {
	return map[string]string{EnvURL: "amqp://guest:guest@" + b.hop.addr() + "/", EnvQueue: Queue}
}

// OnAck sets the hook every settlement on the consumers' link meets
// before the node does (nil: none), once per message it settles. It may
// block, holding that consumer's link; false drops the frame and cuts the
// link.
func (b *Broker) OnAck(f func(broker.Ack) bool) { b.hop.SetHook(f) }

// Publish publishes m to the queue, persistent, with its intent, key and
// stored-copy headers and its dedupe id as message_id, and waits for the
// node's confirm.
func (b *Broker) Publish(ctx context.Context, m broker.Message) (broker.Published, error) {
	b.pubMu.Lock()
	seq := b.ch.GetNextPublishSeqNo()
	dc, err := b.ch.PublishWithDeferredConfirmWithContext(ctx, "", Queue, false, false, amqp.Publishing{
		Headers:      amqp.Table{broker.HeaderIntent: m.Intent, broker.HeaderKey: m.Key, HeaderSeq: int64(seq)},
		DeliveryMode: amqp.Persistent,
		MessageId:    m.DedupeID,
		Body:         m.Body,
	})
	b.pubMu.Unlock()
	if err != nil {
		return broker.Published{}, fmt.Errorf("rabbitmq: publish %s: %w", m.Intent, err)
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil {
		return broker.Published{}, fmt.Errorf("rabbitmq: publish %s: %w", m.Intent, err)
	}
	if !ok {
		return broker.Published{}, fmt.Errorf("rabbitmq: publish %s: the node refused it (basic.nack)", m.Intent)
	}
	// No dedupe: every publish is a stored copy.
	return broker.Published{Seq: seq}, nil
}

// Acks lists the settlements the hop passed on to the node so far, in
// order: acks, rejects or nacks without requeue (Kind "term") and with
// requeue (Kind "nak").
func (b *Broker) Acks(context.Context) ([]broker.Ack, error) { return b.hop.list() }

// Pending is how many messages the queue holds ready for delivery (those
// delivered and not yet acknowledged are not counted).
func (b *Broker) Pending(context.Context) (int, error) {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	q, err := b.ch.QueueDeclarePassive(Queue, true, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("rabbitmq: %w", err)
	}
	return q.Messages, nil
}

// Restart stops the node's VM (SIGTERM, a clean stop: see node.restart)
// and starts it again on the same ports with the same directories,
// returning once it is ready and the harness is connected again. The queue
// is a quorum queue and every publish was confirmed: what the node
// confirmed is in its log, and comes back. The consumers' connections die
// with the VM; the hop holds their reconnects until the node is back, and
// a consumer must reconnect (as one does against a real node's restart).
func (b *Broker) Restart(ctx context.Context) error {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	b.hop.Hold.Pause()
	defer b.hop.Hold.Resume()
	b.hop.Cut()
	if b.conn != nil {
		_ = b.conn.Close()
	}
	if err := b.node.restart(ctx); err != nil {
		return err
	}
	return b.connect(ctx, b.opts)
}

// Close closes the harness's connection and the hop, stops the node and
// its epmd, and reaps every process of the node; its directory stays.
func (b *Broker) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		if b.conn != nil {
			_ = b.conn.Close()
		}
		if b.hop != nil {
			b.hop.Close()
		}
		b.closeErr = b.node.stop(ctx)
	})
	return b.closeErr
}
