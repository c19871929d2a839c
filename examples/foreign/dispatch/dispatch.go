// Package dispatch is a team's shipping consumer on Redis Streams: it
// reads "order placed" events from a stream as one member of a consumer
// group (XREADGROUP with BLOCK) and creates one shipment per order in
// Postgres, deduplicating by the order's id (the business id in the
// event) in a processed_orders table — written the way a Go team would,
// independently of idemchaos.
//
// Redis does not redeliver anything by itself: an entry a crashed
// instance read and never acknowledged stays pending, owned by that
// instance, until someone claims it. So every instance, besides reading
// new entries, claims entries that have been pending longer than the
// claim idle time (XAUTOCLAIM) and processes them again; an entry
// delivered more than MaxDeliveries times is moved to the dead-letter
// stream (<stream>:dead) and acknowledged, so that a message that can
// never be processed does not come back forever.
//
// The correct consumer records the order id and creates the shipment in
// one transaction, and acknowledges (XACK) only after that transaction
// committed: a crash before the commit leaves the entry pending (another
// instance claims it and ships then), a crash after it leaves the id
// recorded (the claimed entry is skipped).
//
// Each flaw (Options.Flaw) is one a team could ship:
//
//   - "ack-first": the entry is acknowledged on receipt, then the
//     transaction runs. A crash in between loses the shipment: the entry
//     is no longer pending, nobody will claim it (no-lost-message).
//   - "no-dedupe": every delivery creates a shipment: a claimed
//     redelivery ships twice, and so does a producer's retry, which
//     Redis stores as a second entry (exactly-once).
//   - "no-claim": the instance reads only new entries and never claims
//     pending ones — it works until an instance dies holding an entry,
//     which then stays pending forever: never redelivered, never
//     acknowledged.
package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Options configure the consumer.
type Options struct {
	RedisURL, Stream, Group string
	// Consumer is this instance's name in the group.
	Consumer string
	// ClaimIdle is how long an entry stays pending before this instance
	// claims it (the broker's ack wait).
	ClaimIdle time.Duration
	// MaxDeliveries is how many deliveries an entry gets before it is
	// dead-lettered (0 = 5).
	MaxDeliveries int
	DatabaseURL   string
	// Flaw is "" (correct), "ack-first", "no-dedupe" or "no-claim".
	Flaw string
	Log  *log.Logger
}

// Flaws lists the flaws Options.Flaw accepts.
var Flaws = []string{"ack-first", "no-dedupe", "no-claim"}

// Schema creates the consumer's tables.
const Schema = `
CREATE TABLE IF NOT EXISTS shipments (
	id          bigserial PRIMARY KEY,
	order_id    text NOT NULL,
	amount      integer NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS processed_orders (
	order_id     text PRIMARY KEY,
	processed_at timestamptz NOT NULL DEFAULT now()
);`

// OrderPlaced is the event's body.
type OrderPlaced struct {
	Order  string `json:"order"`
	Amount int64  `json:"amount"`
}

// batch is how many entries one read or claim takes.
const batch = 10

type consumer struct {
	o    Options
	rdb  *redis.Client
	pool *pgxpool.Pool
}

// Run consumes until ctx is cancelled, finishing the entries in hand.
func Run(ctx context.Context, o Options) error {
	if o.Flaw != "" && !slices.Contains(Flaws, o.Flaw) {
		return fmt.Errorf("unknown flaw %q (want one of %v)", o.Flaw, Flaws)
	}
	if o.Log == nil {
		o.Log = log.Default()
	}
	if o.MaxDeliveries <= 0 {
		o.MaxDeliveries = 5
	}
	if o.ClaimIdle <= 0 {
		o.ClaimIdle = 30 * time.Second
	}
	pool, err := pgxpool.New(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, Schema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	opt, err := redis.ParseURL(o.RedisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	// The group may exist already (another instance, an earlier deploy).
	if err := rdb.XGroupCreateMkStream(ctx, o.Stream, o.Group, "0").Err(); err != nil && !isBusyGroup(err) {
		return fmt.Errorf("create group: %w", err)
	}
	c := &consumer{o: o, rdb: rdb, pool: pool}
	work := context.WithoutCancel(ctx) // the entries in hand are finished even when a stop was asked
	for ctx.Err() == nil {
		if o.Flaw != "no-claim" {
			if err := c.claimStale(work); err != nil {
				c.retryLater(ctx, "claim", err)
				continue
			}
		}
		streams, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: o.Group, Consumer: o.Consumer, Streams: []string{o.Stream, ">"},
			Count: batch, Block: o.ClaimIdle / 2,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue // nothing new within the block
		}
		if err != nil {
			c.retryLater(ctx, "read", err)
			continue
		}
		for _, s := range streams {
			for _, m := range s.Messages {
				c.process(work, m)
			}
		}
	}
	return nil
}

func isBusyGroup(err error) bool { return strings.HasPrefix(err.Error(), "BUSYGROUP") }

// retryLater logs a failure to reach Redis (it restarts, the network
// blips) and waits a little before the loop goes on.
func (c *consumer) retryLater(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	c.o.Log.Printf("%s: %v (retrying)", what, err)
	select {
	case <-ctx.Done():
	case <-time.After(200 * time.Millisecond):
	}
}

// claimStale takes over the entries pending longer than the claim idle
// time — read by an instance that died or hangs — and processes them
// again, dead-lettering those delivered too often.
func (c *consumer) claimStale(ctx context.Context) error {
	start := "0-0"
	for {
		msgs, next, err := c.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: c.o.Stream, Group: c.o.Group, Consumer: c.o.Consumer,
			MinIdle: c.o.ClaimIdle, Start: start, Count: batch,
		}).Result()
		if err != nil {
			return err
		}
		for _, m := range msgs {
			n, err := c.deliveries(ctx, m.ID)
			if err != nil {
				return err
			}
			if n > int64(c.o.MaxDeliveries) {
				c.deadLetter(ctx, m, fmt.Sprintf("delivered %d times", n))
				continue
			}
			c.process(ctx, m)
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// deliveries is the entry's delivery count in the group's pending list.
func (c *consumer) deliveries(ctx context.Context, id string) (int64, error) {
	p, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: c.o.Stream, Group: c.o.Group, Start: id, End: id, Count: 1}).Result()
	if err != nil || len(p) == 0 {
		return 0, err
	}
	return p[0].RetryCount, nil
}

// deadLetter parks the entry on the dead-letter stream with the reason
// and acknowledges it: it is settled, for a person to look at.
func (c *consumer) deadLetter(ctx context.Context, m redis.XMessage, reason string) {
	values := map[string]any{"reason": reason, "source_id": m.ID}
	for k, v := range m.Values {
		values[k] = v
	}
	if err := c.rdb.XAdd(ctx, &redis.XAddArgs{Stream: c.o.Stream + ":dead", Values: values}).Err(); err != nil {
		c.o.Log.Printf("dead-letter %s: %v (left pending)", m.ID, err)
		return
	}
	c.ack(ctx, m)
	c.o.Log.Printf("entry %s dead-lettered: %s", m.ID, reason)
}

func (c *consumer) ack(ctx context.Context, m redis.XMessage) bool {
	if err := c.rdb.XAck(ctx, c.o.Stream, c.o.Group, m.ID).Err(); err != nil {
		c.o.Log.Printf("ack %s: %v (it will be claimed again)", m.ID, err)
		return false
	}
	return true
}

// process handles one entry; a failure leaves it pending, to be claimed
// again after the claim idle time.
func (c *consumer) process(ctx context.Context, m redis.XMessage) {
	raw, _ := m.Values["body"].(string)
	var ev OrderPlaced
	if err := json.Unmarshal([]byte(raw), &ev); err != nil || ev.Order == "" {
		c.deadLetter(ctx, m, "malformed event") // it never becomes valid
		return
	}
	switch c.o.Flaw {
	case "ack-first":
		if !c.ack(ctx, m) {
			return
		}
		if _, err := c.ship(ctx, ev, true); err != nil {
			c.o.Log.Printf("ship %s: %v", ev.Order, err)
		}
		return
	case "no-dedupe":
		if _, err := c.ship(ctx, ev, false); err != nil {
			c.o.Log.Printf("ship %s: %v (left pending)", ev.Order, err)
			return
		}
		c.ack(ctx, m)
		return
	}
	if _, err := c.ship(ctx, ev, true); err != nil {
		c.o.Log.Printf("ship %s: %v (left pending)", ev.Order, err)
		return
	}
	c.ack(ctx, m)
}

// ship creates the order's shipment; with dedupe, it first records the
// order id in the same transaction and ships nothing when it was already
// recorded.
func (c *consumer) ship(ctx context.Context, ev OrderPlaced, dedupe bool) (bool, error) {
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if dedupe {
		tag, err := tx.Exec(ctx, `INSERT INTO processed_orders (order_id) VALUES ($1) ON CONFLICT DO NOTHING`, ev.Order)
		if err != nil {
			return false, err
		}
		if tag.RowsAffected() == 0 {
			return false, nil // shipped already: a redelivery
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO shipments (order_id, amount) VALUES ($1, $2)`, ev.Order, ev.Amount); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}
