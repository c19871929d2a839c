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

// Reading is one read of an oracle: the effects, where it read, and what
// came back when it found none, so that a run can say where an oracle
// that reads nothing at all looked (the wrong place, usually).
type Reading struct {
	Effects []history.Effect
	// Source is where it read: "GET <url>", "query <sql>".
	Source string
	// Got is what came back when no effect did ("0 rows", the status and
	// the start of the body), "" otherwise.
	Got string
}

// Read reads o once.
func Read(ctx context.Context, o Oracle) (Reading, error) {
	if r, ok := o.(reader); ok {
		return r.read(ctx)
	}
	fx, err := o.Effects(ctx)
	return Reading{Effects: fx}, err
}

// reader is an oracle that can say where it read and what came back.
type reader interface {
	read(ctx context.Context) (Reading, error)
}

// maxGot bounds what a Reading quotes of an answer.
const maxGot = 120

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n-- // a rune boundary
	}
	return s[:n] + "…"
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
	r, err := o.read(ctx)
	return r.Effects, err
}

func (o referenceOracle) read(ctx context.Context) (Reading, error) {
	r := Reading{Source: "the reference's database"}
	if o.drain > 0 {
		if err := waitDrained(ctx, o.dsn, o.drain); err != nil {
			return r, err
		}
	}
	fx, err := reference.ReadEffects(ctx, o.dsn)
	if err != nil {
		return r, fmt.Errorf("%w: %w", ErrOracle, err)
	}
	r.Effects = make([]history.Effect, len(fx))
	for i, e := range fx {
		r.Effects[i] = history.Effect{Tenant: e.Tenant, Key: e.Key, Intent: e.Intent, Kind: e.Kind, ID: e.Kind + " " + e.ID}
		if e.State != "" {
			// An order's state, for forward-only: the resource is the
			// order id the provider's callbacks name.
			r.Effects[i].State, r.Effects[i].WrittenAt, r.Effects[i].Resource = e.State, e.StateAt, e.ID
		}
	}
	if len(fx) == 0 {
		r.Got = "no orders, payments or notifications"
	}
	return r, nil
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
