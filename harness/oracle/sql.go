package oracle

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/idemchaos/idemchaos/history"
)

// SQL returns an oracle that runs query on dsn through database/sql, with
// the driver the DSN's scheme names (see [Driver]): postgres:// and
// postgresql:// (and key=value) through pgx, mysql:// through
// go-sql-driver/mysql (harness/oracle/mysql), sqlite:PATH through a pure-Go
// SQLite (harness/oracle/sqlite). Each row is tenant, key and effect id
// (and optionally a fourth column: the kind). Its connections go through
// the [Net] of [Through] (default: loopback only), every host of the DSN
// checked before the first is tried.
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

// read runs the query once; with no row it says which query read nothing.
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
	d, err := driverFor(o.dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: effects.dsn: %w", ErrOracle, err)
	}
	c, err := d.Connector(ctx, o.dsn, o.net)
	if err != nil {
		return nil, fmt.Errorf("%w: effects.dsn: %s: %w", ErrOracle, d.Name, err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, o.query)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: query: %w", ErrOracle, d.Name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrOracle, d.Name, err)
	}
	if len(cols) < 3 {
		return nil, fmt.Errorf("%w: the query must return tenant, key and effect id (got %d columns)", ErrOracle, len(cols))
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []history.Effect
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("%w: %s: row: %w", ErrOracle, d.Name, err)
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
		return nil, fmt.Errorf("%w: %s: %w", ErrOracle, d.Name, err)
	}
	return out, nil
}
