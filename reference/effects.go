package reference

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Effect is one side effect the reference service really produced, read
// from its database for the harness's oracle.
type Effect struct {
	// Tenant and Key are the scope the effect was created under (the key is
	// the client's Idempotency-Key, stored on the order even under the
	// no-key and body-hash-key mutants).
	Tenant string
	Key    string
	// Kind is "order", "ledger" (a debit), "notification" or
	// "payment-credit".
	Kind string
	// ID identifies the effect: the order id, or "<kind>-<row id>".
	ID string
	// OrderID is the order the effect belongs to.
	OrderID string
	// Intent is the X-Intent-ID the order was created with, when the
	// client sent one; empty otherwise.
	Intent string
	// State and StateAt, on an order, are its state (pending, paid,
	// fulfilled) and when it last changed.
	State   string
	StateAt time.Time
}

// Effect kinds.
const (
	EffectOrder         = "order"
	EffectLedger        = "ledger"
	EffectNotification  = "notification"
	EffectPaymentCredit = "payment-credit"
	// EffectCallback is a provider callback recorded once (its
	// provider_tx): one per event, however often it was delivered.
	EffectCallback = "callback"
)

const sqlEffects = `
SELECT 'order', o.tenant, o.idem_key, o.id, o.id, coalesce(o.intent, ''), o.state, o.state_at FROM orders o
UNION ALL
SELECT CASE l.kind WHEN 'debit' THEN 'ledger' ELSE 'payment-credit' END, o.tenant, o.idem_key,
       l.kind || '-' || l.id, o.id, coalesce(o.intent, ''), '', NULL
FROM ledger_entries l JOIN orders o ON o.id = l.order_id
UNION ALL
SELECT 'notification', n.tenant, n.idem_key, 'notification-' || n.id, n.order_id, coalesce(o.intent, ''), '', NULL
FROM notifications n LEFT JOIN orders o ON o.id = n.order_id
UNION ALL
SELECT 'callback', 'provider', c.provider_tx, 'callback-' || c.provider_tx, c.order_id, coalesce(c.intent, ''), '', NULL
FROM payment_callbacks c
ORDER BY 1, 2, 3, 4`

// ReadEffects reads every effect in the database at dsn, ordered by kind,
// tenant, key and id.
func ReadEffects(ctx context.Context, dsn string) ([]Effect, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("read effects: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, sqlEffects)
	if err != nil {
		return nil, fmt.Errorf("read effects: %w", err)
	}
	effects, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Effect, error) {
		var e Effect
		var at *time.Time
		err := r.Scan(&e.Kind, &e.Tenant, &e.Key, &e.ID, &e.OrderID, &e.Intent, &e.State, &at)
		if at != nil {
			e.StateAt = *at
		}
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read effects: %w", err)
	}
	return effects, nil
}
