package oracle

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	r, err := o.read(ctx)
	return r.Effects, err
}

func (o sqlOracle) read(ctx context.Context) (Reading, error) {
	r := Reading{Source: "query " + clip(oneLine(o.query), maxGot)}
	fx, err := o.rows(ctx)
	r.Effects = fx
	if err == nil && len(fx) == 0 {
		r.Got = "0 rows"
	}
	return r, err
}

// oneLine is a query on one line, its whitespace collapsed.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (o sqlOracle) rows(ctx context.Context) ([]history.Effect, error) {
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
