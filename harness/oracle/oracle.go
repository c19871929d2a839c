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
