package reference

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// sqlClaimEvents claims visible, unacknowledged events. SKIP LOCKED
	// lets several consumers share the outbox; the visibility timeout makes
	// an event whose consumer died visible again (at-least-once delivery).
	sqlClaimEvents = `UPDATE outbox_events o
SET claim_token = $1, visible_at = now() + $2::float8 * interval '1 second', attempts = o.attempts + 1
FROM (SELECT id FROM outbox_events WHERE acked_at IS NULL AND visible_at <= now() ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED) c
WHERE o.id = c.id
RETURNING o.id, o.payload`
	// sqlConsumed records the event id in the effect's own transaction:
	// a redelivered event conflicts here and causes no second effect.
	sqlConsumed = `INSERT INTO consumed_events (event_id, consumer) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING`
	// sqlNotify is the effect: the "email sent".
	sqlNotify = `INSERT INTO notifications (event_id, tenant, idem_key, order_id) VALUES ($1, $2, $3, $4)`
	// sqlAck acknowledges, only under the claim this consumer still holds.
	sqlAck = `UPDATE outbox_events SET acked_at = now() WHERE id = $1 AND claim_token = $2`
)

type consumer struct {
	cfg  ConsumerConfig
	m    mutant
	log  *slog.Logger
	pool *pgxpool.Pool
	fp   *failpoints
}

type outboxEvent struct {
	id      int64
	payload outboxPayload
}

// Consume runs an outbox consumer until ctx is done (or, with
// [ConsumerConfig.ExitWhenIdle], until the outbox has no visible event),
// then returns nil. Delivery is at-least-once; the effect (a notifications
// row) is exactly-once because the event id is recorded in consumed_events
// in the effect's transaction, before the ack.
func Consume(ctx context.Context, cfg ConsumerConfig, logs io.Writer) error {
	m, err := parseMutant(cfg.Mutant)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	cfg = cfg.withDefaults(os.Getpid())
	if cfg.DSN == "" {
		return fmt.Errorf("consume: dsn is empty: %w", ErrInvalidConfig)
	}
	log := slog.New(slog.NewJSONHandler(logs, nil)).With("service", "consumer", "consumer", cfg.Name)
	if m != mutantNone {
		log = log.With("mutant", string(m))
	}
	if err := Migrate(ctx, cfg.DSN); err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	pool, err := openPool(ctx, cfg.DSN, 4)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	defer pool.Close()
	c := &consumer{cfg: cfg, m: m, log: log, pool: pool}
	c.fp = newFailpoints(cfg.Failpoints, func(name string) {
		log.Error("failpoint crash: SIGKILL self", "failpoint", name)
		selfKill(name)
	})
	c.fp.allow = cfg.DebugAllow
	defer c.fp.close()

	addr := ""
	if cfg.Failpoints {
		ln, err := net.Listen("tcp", cfg.DebugAddr)
		if err != nil {
			return fmt.Errorf("consume: debug listen: %w", err)
		}
		mux := http.NewServeMux()
		mountFailpoints(mux, c.fp)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			c.fp.close()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		addr = ln.Addr().String()
	}
	log.Info("consuming", "debug_addr", addr, "visibility_timeout", cfg.VisibilityTimeout.String())
	if cfg.Ready != nil {
		cfg.Ready(addr)
	}
	return c.run(ctx)
}

func (c *consumer) run(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			return nil
		}
		events, token, err := c.claim(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.log.Warn("claim failed", "error", err.Error())
		}
		for _, ev := range events {
			if err := c.handle(ctx, ev, token); err != nil {
				if ctx.Err() != nil {
					return nil // died mid-event: the visibility timeout redelivers it
				}
				c.log.Warn("event failed; it will be redelivered", "event_id", ev.id, "error", err.Error())
			}
		}
		if err == nil && len(events) > 0 {
			continue
		}
		if err == nil && c.cfg.ExitWhenIdle {
			return nil
		}
		t := time.NewTimer(c.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func (c *consumer) claim(ctx context.Context) ([]outboxEvent, string, error) {
	token := newToken()
	rows, err := c.pool.Query(ctx, sqlClaimEvents, token, c.cfg.VisibilityTimeout.Seconds(), c.cfg.Batch)
	if err != nil {
		return nil, "", fmt.Errorf("claim events: %w", err)
	}
	defer rows.Close()
	var events []outboxEvent
	for rows.Next() {
		var ev outboxEvent
		var raw []byte
		if err := rows.Scan(&ev.id, &raw); err != nil {
			return nil, "", fmt.Errorf("claim events: scan: %w", err)
		}
		if err := json.Unmarshal(raw, &ev.payload); err != nil {
			return nil, "", fmt.Errorf("claim events: payload of %d: %w", ev.id, err)
		}
		events = append(events, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("claim events: %w", err)
	}
	return events, token, nil
}

// handle performs one event's effect and acknowledges it.
func (c *consumer) handle(ctx context.Context, ev outboxEvent, token string) error {
	log := c.log.With("event_id", ev.id, "tenant", ev.payload.Tenant, "idempotency_key", ev.payload.Key, "order_id", ev.payload.OrderID)
	if err := c.fp.hit(ctx, fpConsumerAfterClaim); err != nil {
		return err
	}
	effect, err := c.effect(ctx, ev)
	if err != nil {
		return err
	}
	if err := c.fp.hit(ctx, fpConsumerAfterEffect); err != nil {
		return err
	}
	if _, err := c.pool.Exec(ctx, sqlAck, ev.id, token); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	log.Info("event consumed", "effect", effect)
	return nil
}

// effect writes the notification and the consumed_events row in one
// transaction; it reports whether the notification was sent or skipped as
// a redelivery.
func (c *consumer) effect(ctx context.Context, ev outboxEvent) (string, error) {
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("effect: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// MUTANT consumer-no-dedupe: the event id is neither checked nor
	// recorded, so a redelivery sends the notification again.
	if !c.m.is(mutantConsumerNoDedupe) {
		tag, err := tx.Exec(ctx, sqlConsumed, ev.id, c.cfg.Name)
		if err != nil {
			return "", fmt.Errorf("effect: dedupe: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return "duplicate-skipped", nil
		}
	}
	if _, err := tx.Exec(ctx, sqlNotify, ev.id, ev.payload.Tenant, ev.payload.Key, ev.payload.OrderID); err != nil {
		return "", fmt.Errorf("effect: notify: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("effect: commit: %w", err)
	}
	return "notification-sent", nil
}
