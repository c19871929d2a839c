package reference

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrateLockID is the advisory lock that serialises concurrent migrations
// (the service and the consumer both migrate at start-up; concurrent
// CREATE TABLE IF NOT EXISTS can still collide in the catalog).
const migrateLockID = 0x1de3c4a05

// schemaSQL is the whole schema. Every statement is idempotent.
//
// Defence in depth (seed 002 §五): besides the key table, the business
// tables carry their own unique constraints. The backstop_ref columns are the
// business-level uniqueness ("one order per tenant+scope+key", "one debit
// and one credit per order"). They are nullable only so that a mutant whose
// pitfall is a duplicate can switch its backstop off: a backstop would turn
// the duplicate into a 500 and hide the very pitfall the mutant exists to
// show. The correct service always fills them.
const schemaSQL = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
	tenant           text        NOT NULL,
	scope            text        NOT NULL,
	idem_key         text        NOT NULL,
	fingerprint      text        NOT NULL,
	state            text        NOT NULL CHECK (state IN ('processing', 'succeeded', 'failed')),
	status_code      int,
	response_headers jsonb,
	response_body    bytea,
	lease_token      text,
	lease_expires_at timestamptz,
	created_at       timestamptz NOT NULL DEFAULT now(),
	updated_at       timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (tenant, scope, idem_key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created_at ON idempotency_keys (created_at);

CREATE TABLE IF NOT EXISTS accounts (
	tenant   text   PRIMARY KEY,
	balance  bigint NOT NULL CHECK (balance >= 0),
	credited bigint NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS orders (
	id           text        PRIMARY KEY,
	tenant       text        NOT NULL,
	idem_key     text        NOT NULL,
	intent       text,
	sku          text        NOT NULL,
	qty          int         NOT NULL CHECK (qty > 0),
	amount       bigint      NOT NULL CHECK (amount > 0),
	state        text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'paid', 'fulfilled')),
	backstop_ref text        UNIQUE,
	created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS orders_tenant_key ON orders (tenant, idem_key);

CREATE TABLE IF NOT EXISTS ledger_entries (
	id           bigserial   PRIMARY KEY,
	tenant       text        NOT NULL,
	order_id     text        NOT NULL REFERENCES orders (id),
	kind         text        NOT NULL CHECK (kind IN ('debit', 'credit')),
	amount       bigint      NOT NULL CHECK (amount > 0),
	backstop_ref text        UNIQUE,
	created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS outbox_events (
	id           bigserial   PRIMARY KEY,
	tenant       text        NOT NULL,
	aggregate_id text        NOT NULL,
	event_type   text        NOT NULL,
	payload      jsonb       NOT NULL,
	visible_at   timestamptz NOT NULL DEFAULT now(),
	claim_token  text,
	attempts     int         NOT NULL DEFAULT 0,
	acked_at     timestamptz,
	created_at   timestamptz NOT NULL DEFAULT now(),
	UNIQUE (aggregate_id, event_type)
);
CREATE INDEX IF NOT EXISTS outbox_events_pending ON outbox_events (visible_at, id) WHERE acked_at IS NULL;

CREATE TABLE IF NOT EXISTS consumed_events (
	event_id    bigint      PRIMARY KEY,
	consumer    text        NOT NULL,
	consumed_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS notifications (
	id         bigserial   PRIMARY KEY,
	event_id   bigint      NOT NULL,
	tenant     text        NOT NULL,
	idem_key   text        NOT NULL,
	order_id   text        NOT NULL,
	channel    text        NOT NULL DEFAULT 'email',
	created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS payment_callbacks (
	provider_tx text        PRIMARY KEY,
	order_id    text        NOT NULL,
	status      text        NOT NULL,
	amount      bigint      NOT NULL,
	payload     jsonb       NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT now()
);
-- The X-Intent-Id a callback arrived with (the oracle's ground truth), and
-- when an order's state last changed (forward-only reads it).
ALTER TABLE payment_callbacks ADD COLUMN IF NOT EXISTS intent text;
ALTER TABLE orders ADD COLUMN IF NOT EXISTS state_at timestamptz NOT NULL DEFAULT clock_timestamp();
`

// Migrate creates the reference schema in the database at dsn. It is
// idempotent and safe to run concurrently from several processes.
func Migrate(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return migrateConn(ctx, conn)
}

func migrateConn(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrateLockID)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	// Exec without arguments uses the simple protocol, which accepts
	// several statements in one string.
	if _, err := tx.Exec(ctx, schemaSQL); err != nil {
		return fmt.Errorf("migrate: schema: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
