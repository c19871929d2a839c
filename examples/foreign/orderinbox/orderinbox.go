// Package orderinbox is a team's order consumer on NATS JetStream: it
// takes "order placed" messages from a durable pull consumer and books
// each order in Postgres once, deduplicating by the order's id (the
// business id in the message body) in a processed_messages table — written
// the way a team would, independently of idemchaos.
//
// The correct consumer books the order and records its id in one
// transaction, and acknowledges only after that transaction committed: a
// crash before the commit leaves the message unacknowledged (the broker
// delivers it again and the order is booked then), a crash after it
// leaves the id recorded (the redelivery is skipped).
//
// Each flaw (Options.Flaw) is one a team could ship:
//
//   - "ack-first": the message is acknowledged on receipt (waiting for
//     the broker's confirmation), then the transaction runs. A crash in between loses the order: the broker
//     will not deliver it again (no-lost-message).
//   - "mark-after-ack": the id is looked up first, the order booked, the
//     message acknowledged (waiting for the broker's confirmation), and the
//     id recorded last. A crash after the
//     booking and before the ack reached the broker redelivers a message
//     whose id was never recorded: a second order (exactly-once).
//   - "no-dedupe": every delivery books an order (exactly-once, under
//     any redelivery or a producer's retry).
package orderinbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options configure the consumer.
type Options struct {
	NATSURL, Stream, Consumer string
	DatabaseURL               string
	// Flaw is "" (correct), "ack-first", "mark-after-ack" or "no-dedupe".
	Flaw string
	Log  *log.Logger
}

// Flaws lists the flaws Options.Flaw accepts.
var Flaws = []string{"ack-first", "mark-after-ack", "no-dedupe"}

// Schema creates the consumer's tables.
const Schema = `
CREATE TABLE IF NOT EXISTS orders (
	id         bigserial PRIMARY KEY,
	order_id   text NOT NULL,
	amount     integer NOT NULL,
	booked_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS processed_messages (
	order_id     text PRIMARY KEY,
	processed_at timestamptz NOT NULL DEFAULT now()
);`

// OrderPlaced is the message body.
type OrderPlaced struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// Run consumes until ctx is cancelled, finishing the message in hand.
func Run(ctx context.Context, o Options) error {
	if o.Flaw != "" && !contains(Flaws, o.Flaw) {
		return fmt.Errorf("unknown flaw %q (want one of %v)", o.Flaw, Flaws)
	}
	if o.Log == nil {
		o.Log = log.Default()
	}
	pool, err := pgxpool.New(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, Schema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	nc, err := nats.Connect(o.NATSURL, nats.Name("orderinbox"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.Consumer(ctx, o.Stream, o.Consumer)
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(10))
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); it.Stop() }()
	for {
		msg, err := it.Next()
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			return nc.Flush() // the last ack goes out before we leave
		}
		if err != nil {
			return err
		}
		// The message in hand is finished even when a stop was asked.
		if err := handle(context.WithoutCancel(ctx), pool, msg, o.Flaw); err != nil {
			o.Log.Printf("order message: %v (left for redelivery)", err)
			_ = msg.Nak()
		}
	}
}

func handle(ctx context.Context, pool *pgxpool.Pool, msg jetstream.Msg, flaw string) error {
	var m OrderPlaced
	if err := json.Unmarshal(msg.Data(), &m); err != nil || m.Order == "" {
		return msg.Term() // a malformed message never becomes valid
	}
	switch flaw {
	case "ack-first":
		// Made sure of first: the broker confirms the ack before the work.
		if err := msg.DoubleAck(ctx); err != nil {
			return err
		}
		_, err := book(ctx, pool, m, true)
		return err
	case "mark-after-ack":
		var seen bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM processed_messages WHERE order_id = $1)`, m.Order).Scan(&seen); err != nil {
			return err
		}
		if !seen {
			if _, err := book(ctx, pool, m, false); err != nil {
				return err
			}
		}
		// Marked processed only once the broker confirmed the ack.
		if err := msg.DoubleAck(ctx); err != nil {
			return err
		}
		_, err := pool.Exec(ctx, `INSERT INTO processed_messages (order_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.Order)
		return err
	case "no-dedupe":
		if _, err := book(ctx, pool, m, false); err != nil {
			return err
		}
		return msg.Ack()
	}
	if _, err := book(ctx, pool, m, true); err != nil {
		return err
	}
	return msg.Ack()
}

// book books the order; with dedupe, it first records the order id in
// the same transaction and books nothing when it was already recorded.
func book(ctx context.Context, pool *pgxpool.Pool, m OrderPlaced, dedupe bool) (bool, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if dedupe {
		tag, err := tx.Exec(ctx, `INSERT INTO processed_messages (order_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.Order)
		if err != nil {
			return false, err
		}
		if tag.RowsAffected() == 0 {
			return false, nil // already booked: a redelivery
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders (order_id, amount) VALUES ($1, $2)`, m.Order, m.Amount); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
