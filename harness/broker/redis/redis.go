package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/internal/proc"
)

func init() {
	broker.Register(Kind, func(ctx context.Context, opts broker.Options) (broker.Broker, error) { return Start(ctx, opts) })
}

// Kind is the broker kind this package registers.
const Kind = "redis"

// The names a consumer finds in its environment, and the values the
// harness uses.
const (
	EnvURL        = "IDEMCHAOS_REDIS_URL"
	EnvStream     = "IDEMCHAOS_REDIS_STREAM"
	EnvGroup      = "IDEMCHAOS_REDIS_GROUP"
	EnvAckWaitMS  = "IDEMCHAOS_REDIS_ACK_WAIT_MS"
	EnvMaxDeliver = "IDEMCHAOS_REDIS_MAX_DELIVER"

	Stream = "idemchaos"
	Group  = "idemchaos"
	// FieldBody is the entry field that holds the message's body; the
	// intent and the business key are the fields [broker.HeaderIntent]
	// and [broker.HeaderKey].
	FieldBody = "body"
)

// setting names the broker's listener and the harness's connections to
// it in the gate's messages.
const setting = "broker (redis)"

// Broker is a started redis-server with the stream and consumer group of
// one run, the harness's own connection to it, and the consumers' link.
type Broker struct {
	srv        *proc.Process
	addr       string // host:port of the server
	rdb        *goredis.Client
	hop        *hop
	ackWait    time.Duration
	maxDeliver int

	mu   sync.Mutex
	seqs map[string]uint64 // entry id → its position in the stream
	last uint64
	acks []broker.Ack
	// uncertain are acks whose XACK went on and got no reply (the server
	// died under it): [Broker.Acks] reads back whether it applied them.
	uncertain []broker.Ack
	bad       error // what the harness could not read of an ack

	closeOnce sync.Once
	closeErr  error
}

var (
	_ broker.Broker          = (*Broker)(nil)
	_ broker.DeliveryCounter = (*Broker)(nil)
	_ broker.Restarter       = (*Broker)(nil)
)

// Start starts redis-server with its store in opts.Dir, connects to it
// and creates the run's stream and consumer group.
func Start(ctx context.Context, opts broker.Options) (*Broker, error) {
	if opts.Dir == "" {
		return nil, errors.New("redis: no store directory (Options.Dir)")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("redis: store directory: %w", err)
	}
	listen, err := opts.Gate.ListenAddr(ctx, opts.Listen, setting)
	if err != nil {
		return nil, err
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("redis: listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("redis: listen %q: %w", listen, err)
	}
	b := &Broker{ackWait: opts.AckWait, maxDeliver: opts.MaxDeliver, seqs: map[string]uint64{}}
	if b.ackWait <= 0 {
		b.ackWait = broker.DefaultAckWait
	}
	if b.maxDeliver <= 0 {
		b.maxDeliver = broker.DefaultMaxDeliver
	}
	if b.srv, b.addr, err = startServer(ctx, host, port, opts.Dir); err != nil {
		return nil, err
	}
	way := opts.Gate.For(setting)
	b.rdb = goredis.NewClient(&goredis.Options{
		Addr: b.addr, Dialer: way.DialContext, ClientName: "idemchaos",
		DisableIdentity: true, MaxRetries: 5,
	})
	b.hop = &hop{upstream: b.addr, stream: Stream, group: Group, lookup: b.lookup, confirm: b.confirm, orphan: b.orphan}
	if err := startHop(ctx, opts.Gate, b.hop); err != nil {
		_ = b.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("redis: consumer link: %w", err)
	}
	// The group reads from the stream's start: the harness publishes
	// before the consumers start, and they must get every entry.
	if err := b.rdb.XGroupCreateMkStream(ctx, Stream, Group, "0").Err(); err != nil {
		_ = b.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("redis: create group %s on stream %s: %w", Group, Stream, err)
	}
	return b, nil
}

// Kind is "redis".
func (b *Broker) Kind() string { return Kind }

// URL is the server's redis:// URL on loopback (the harness's way in; a
// consumer is given its link's, [Broker.Env]).
func (b *Broker) URL() string { return "redis://" + b.addr }

// Env is what a consumer is started with: the URL of its link to the
// server (the hop that [Broker.OnAck] watches), the stream and group
// names, the ack wait in milliseconds (the min-idle-time its XAUTOCLAIM
// must use: Redis redelivers nothing by itself) and the deliveries after
// which it should give a message up (Redis does not count them for it).
func (b *Broker) Env() map[string]string {
	return map[string]string{
		EnvURL: "redis://" + b.hop.addr(0) + "/0", EnvStream: Stream, EnvGroup: Group,
		EnvAckWaitMS:  strconv.FormatInt(b.ackWait.Milliseconds(), 10),
		EnvMaxDeliver: strconv.Itoa(b.maxDeliver),
	}
}

// OnAck sets the hook every XACK on the consumers' link meets before the
// server does (nil: none). It may block, holding that consumer's link;
// false drops the ack and cuts the link.
func (b *Broker) OnAck(f func(broker.Ack) bool) { b.hop.SetHook(f) }

// Publish adds m to the stream (XADD) with its intent, key and body as
// fields. Redis has no dedupe: every publish is a new entry, m.DedupeID
// is not sent, and Duplicate is never set.
func (b *Broker) Publish(ctx context.Context, m broker.Message) (broker.Published, error) {
	id, err := b.rdb.XAdd(ctx, &goredis.XAddArgs{Stream: Stream,
		Values: []any{broker.HeaderIntent, m.Intent, broker.HeaderKey, m.Key, FieldBody, m.Body}}).Result()
	if err != nil {
		return broker.Published{}, fmt.Errorf("redis: publish %s: %w", m.Intent, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last++
	b.seqs[id] = b.last
	return broker.Published{Seq: b.last}, nil
}

// normalID is an entry id as XADD returned it: a bare millisecond time
// means its first entry ("5" is "5-0").
func normalID(id string) string {
	if strings.Contains(id, "-") {
		return id
	}
	return id + "-0"
}

// lookup reads the delivery counts of an XACK's entries from the group's
// pending list before the XACK goes on; an entry not pending (never
// delivered, already acknowledged) is left out, as the server will not
// count it acknowledged either.
func (b *Broker) lookup(ctx context.Context, ids []string) []broker.Ack {
	type q struct {
		seq uint64
		cmd *goredis.XPendingExtCmd
	}
	var qs []q
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := b.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, id := range ids {
			id = normalID(id)
			b.mu.Lock()
			seq, ok := b.seqs[id]
			b.mu.Unlock()
			if ok {
				qs = append(qs, q{seq, p.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: Stream, Group: Group, Start: id, End: id, Count: 1})})
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		b.fail(fmt.Errorf("redis: read the delivery count of an ack: %w", err))
		return nil
	}
	var out []broker.Ack
	for _, x := range qs {
		if pe := x.cmd.Val(); len(pe) == 1 {
			out = append(out, broker.Ack{Seq: x.seq, Delivered: uint64(pe[0].RetryCount), Kind: "ack"})
		}
	}
	return out
}

func (b *Broker) orphan(acks []broker.Ack) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.uncertain = append(b.uncertain, acks...)
}

// settleUncertain reads back the acks whose XACK got no reply: an entry
// no longer pending was acknowledged by it (the server applied and
// fsynced the XACK, then died before it answered); one still pending was
// not, and will be delivered again. While the server is down they wait.
func (b *Broker) settleUncertain(ctx context.Context) {
	b.mu.Lock()
	todo := b.uncertain
	b.uncertain = nil
	ids := map[uint64]string{}
	if len(todo) > 0 {
		for id, seq := range b.seqs {
			ids[seq] = id
		}
	}
	b.mu.Unlock()
	var keep, applied []broker.Ack
	for _, a := range todo {
		pe, err := b.rdb.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: Stream, Group: Group, Start: ids[a.Seq], End: ids[a.Seq], Count: 1}).Result()
		switch {
		case err != nil:
			keep = append(keep, a)
		case len(pe) == 0:
			a.At = time.Now()
			applied = append(applied, a)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.acks = append(b.acks, applied...)
	b.uncertain = append(b.uncertain, keep...)
}

// confirm records the acks of an XACK the server answered with n
// acknowledged entries. When it acknowledged fewer than were pending
// (another consumer acknowledged some in between), those still pending
// are told apart from those that are not by asking again.
func (b *Broker) confirm(acks []broker.Ack, n int64) {
	if n < int64(len(acks)) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.mu.Lock()
		ids := map[uint64]string{}
		for id, seq := range b.seqs {
			ids[seq] = id
		}
		b.mu.Unlock()
		kept := acks[:0:0]
		for _, a := range acks {
			pe, err := b.rdb.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: Stream, Group: Group, Start: ids[a.Seq], End: ids[a.Seq], Count: 1}).Result()
			if err != nil {
				b.fail(fmt.Errorf("redis: read back an ack: %w", err))
				return
			}
			if len(pe) == 0 {
				kept = append(kept, a)
			}
		}
		acks = kept
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range acks {
		a.At = now
		b.acks = append(b.acks, a)
	}
}

func (b *Broker) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bad == nil {
		b.bad = err
	}
}

// Acks lists the acks the server confirmed so far, in the order it
// confirmed them, each with the entry's delivery count when its XACK
// passed the link.
func (b *Broker) Acks(ctx context.Context) ([]broker.Ack, error) {
	b.settleUncertain(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]broker.Ack(nil), b.acks...), b.bad
}

// Deliveries is the server's count of deliveries of every entry it
// delivered: the group's pending list's times-delivered (XPENDING) for the
// entries not acknowledged yet, and the count each ack read there when
// its XACK passed the link for the others. Redis never gives up on an
// entry by itself (no max-deliver, no dead-letter stream: a consumer
// that stops claiming an entry leaves it pending), so none is exhausted;
// nor has it a nak — a consumer that cannot apply an entry leaves it
// unacknowledged until a claim delivers it again.
func (b *Broker) Deliveries(ctx context.Context) ([]broker.Delivery, error) {
	acks, err := b.Acks(ctx)
	if err != nil {
		return nil, err
	}
	pe, err := b.rdb.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: Stream, Group: Group, Start: "-", End: "+", Count: 1 << 20}).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis: read the pending list: %w", err)
	}
	counts := map[uint64]uint64{}
	b.mu.Lock()
	for _, p := range pe {
		if seq, ok := b.seqs[normalID(p.ID)]; ok {
			counts[seq] = max(counts[seq], uint64(p.RetryCount))
		}
	}
	b.mu.Unlock()
	for _, a := range acks {
		counts[a.Seq] = max(counts[a.Seq], a.Delivered)
	}
	out := make([]broker.Delivery, 0, len(counts))
	for seq, n := range counts {
		out = append(out, broker.Delivery{Seq: seq, Count: n})
	}
	slices.SortFunc(out, func(x, y broker.Delivery) int { return cmp.Compare(x.Seq, y.Seq) })
	return out, nil
}

// Pending is how many of the stream's entries are not acknowledged yet:
// those in the group's pending list (delivered, not acknowledged) and
// those never delivered.
func (b *Broker) Pending(ctx context.Context) (uint64, error) {
	gs, err := b.rdb.XInfoGroups(ctx, Stream).Result()
	if err != nil {
		return 0, fmt.Errorf("redis: %w", err)
	}
	for _, g := range gs {
		if g.Name != Group {
			continue
		}
		lag := g.Lag
		if lag < 0 { // unknown: after a restart, Redis 7.0 has lost its count
			after, err := b.rdb.XRange(ctx, Stream, "("+g.LastDeliveredID, "+").Result()
			if err != nil {
				return 0, fmt.Errorf("redis: %w", err)
			}
			lag = int64(len(after))
		}
		return uint64(g.Pending + lag), nil
	}
	return 0, fmt.Errorf("redis: no group %s on stream %s", Group, Stream)
}

// Restart kills redis-server (SIGKILL: no shutdown, no final fsync) and
// starts it again on the same port with the same directory, returning
// once it has loaded its append-only file and accepts connections. Every
// write it answered before the kill is back: the entries, the group and
// its pending list with their delivery counts. Connections through the
// consumers' link are cut by the kill; a consumer must reconnect.
func (b *Broker) Restart(ctx context.Context) error {
	b.hop.Hold.Pause() // reconnects wait for the new server
	defer b.hop.Hold.Resume()
	if err := b.srv.Kill(ctx); err != nil && !errors.Is(err, proc.ErrNotRunning) {
		return fmt.Errorf("redis: restart: %w", err)
	}
	if err := b.srv.Restart(ctx); err != nil {
		return fmt.Errorf("redis: restart: %w", err)
	}
	b.settleUncertain(ctx)
	return nil
}

// Close closes the harness's connection and the consumers' link and
// stops redis-server (SIGTERM, then SIGKILL after a grace), waiting until
// it has exited. Its files stay in [broker.Options.Dir].
func (b *Broker) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		if b.hop != nil && b.hop.lns != nil {
			b.hop.Close()
		}
		if b.rdb != nil {
			_ = b.rdb.Close()
		}
		if b.srv != nil {
			if err := b.srv.Stop(ctx); err != nil {
				b.closeErr = fmt.Errorf("redis: stop: %w", err)
			}
		}
	})
	return b.closeErr
}
