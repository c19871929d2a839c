package oracle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/reference"
)

// ErrOracle is wrapped by every error an oracle returns, so the CLI can
// tell "the oracle could not be read" (exit 3) from a violation.
var ErrOracle = errors.New("effect oracle")

// Oracle reads effects.
type Oracle interface {
	Effects(ctx context.Context) ([]history.Effect, error)
}

// Reference returns the oracle of the reference service whose database is
// at dsn. When drain is set it first waits (up to drain) for the outbox to
// be delivered, since notifications are produced asynchronously.
func Reference(dsn string, drain time.Duration) Oracle { return referenceOracle{dsn, drain} }

type referenceOracle struct {
	dsn   string
	drain time.Duration
}

func (o referenceOracle) Effects(ctx context.Context) ([]history.Effect, error) {
	if o.drain > 0 {
		if err := waitDrained(ctx, o.dsn, o.drain); err != nil {
			return nil, err
		}
	}
	fx, err := reference.ReadEffects(ctx, o.dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOracle, err)
	}
	out := make([]history.Effect, len(fx))
	for i, e := range fx {
		out[i] = history.Effect{Tenant: e.Tenant, Key: e.Key, Intent: e.Intent, Kind: e.Kind, ID: e.Kind + " " + e.ID}
	}
	return out, nil
}

// waitDrained polls until every outbox event is acknowledged. The consumer
// is another process: the database is the only place its progress shows.
func waitDrained(ctx context.Context, dsn string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("%w: drain: %w", ErrOracle, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	wait := 10 * time.Millisecond
	for {
		var pending int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE acked_at IS NULL`).Scan(&pending); err != nil {
			if ctx.Err() != nil {
				return nil // not drained in time: read what is there
			}
			return fmt.Errorf("%w: drain: %w", ErrOracle, err)
		}
		if pending == 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(wait*2, 200*time.Millisecond)
	}
}

// SQL returns an oracle that runs query on dsn; each row is tenant, key and
// effect id (and optionally a fourth column: the kind). Its connection goes
// through the [Net] of [Through] (default: loopback only), every host of
// the DSN checked before the first is tried.
func SQL(dsn, query string, opts ...Option) Oracle {
	return sqlOracle{dsn: dsn, query: query, net: netFor("effects.dsn", opts)}
}

type sqlOracle struct {
	dsn, query string
	net        Net
}

func (o sqlOracle) Effects(ctx context.Context) ([]history.Effect, error) {
	conn, err := connect(ctx, o.net, o.dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: connect: %w", ErrOracle, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The simple protocol: one round trip, and any query the user wrote.
	rows, err := conn.Query(ctx, o.query, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, fmt.Errorf("%w: query: %w", ErrOracle, err)
	}
	defer rows.Close()
	var out []history.Effect
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, fmt.Errorf("%w: row: %w", ErrOracle, err)
		}
		if len(vals) < 3 {
			return nil, fmt.Errorf("%w: the query must return tenant, key and effect id (got %d columns)", ErrOracle, len(vals))
		}
		e := history.Effect{Tenant: text(vals[0]), Key: text(vals[1]), ID: text(vals[2])}
		if len(vals) > 3 {
			e.Kind = text(vals[3])
		}
		if e.Kind == "" {
			e.Kind = kindOf(e.ID)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOracle, err)
	}
	return out, nil
}

func text(v any) string {
	if v == nil {
		return ""
	}
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}

// kindOf is the first word of an effect id, like history's effect kinds.
func kindOf(id string) string {
	for i := 0; i < len(id); i++ {
		if id[i] == ' ' {
			return id[:i]
		}
	}
	return "effect"
}
