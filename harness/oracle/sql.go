package oracle

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// SQL returns an oracle that runs query on dsn through database/sql, with
// the driver the DSN's scheme names (see [Driver]): postgres:// and
// postgresql:// (and key=value) through pgx, mysql:// through
// go-sql-driver/mysql (harness/oracle/mysql), sqlite:PATH through a pure-Go
// SQLite (harness/oracle/sqlite). Each row is tenant, key and effect id
// (and optionally a fourth column: the kind); columns named state,
// written_at and resource, wherever they stand, are the state of the
// effect's resource, when it was written and which resource it is
// (forward-only's). Its connections go through
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
	pos, named := columnsOf(cols)
	if len(pos) < 3 {
		return nil, fmt.Errorf("%w: the query must return tenant, key and effect id (got %d columns)", ErrOracle, len(pos))
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
		e := history.Effect{Tenant: text(vals[pos[0]]), Key: text(vals[pos[1]]), ID: text(vals[pos[2]])}
		if len(pos) > 3 {
			e.Kind = text(vals[pos[3]])
		}
		if e.Kind == "" {
			e.Kind = kindOf(e.ID)
		}
		if i, ok := named["state"]; ok {
			e.State = text(vals[i])
		}
		if i, ok := named["resource"]; ok {
			e.Resource = text(vals[i])
		}
		if i, ok := named["written_at"]; ok && vals[i] != nil {
			if e.WrittenAt, err = writtenAt(vals[i]); err != nil {
				return nil, fmt.Errorf("%w: %s: row %d: written_at: %w", ErrOracle, d.Name, len(out)+1, err)
			}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrOracle, d.Name, err)
	}
	return out, nil
}

// namedColumns are the columns a query names rather than places.
var namedColumns = []string{"state", "written_at", "resource"}

// columnsOf splits a query's columns into the positional ones (tenant,
// key, id, kind) and the named ones, by lower-case name.
func columnsOf(cols []string) (pos []int, named map[string]int) {
	named = map[string]int{}
	for i, c := range cols {
		if n := strings.ToLower(c); slices.Contains(namedColumns, n) {
			if _, dup := named[n]; !dup {
				named[n] = i
			}
			continue
		}
		pos = append(pos, i)
	}
	return pos, named
}

// timeLayouts are the text forms of a written_at that databases and JSON
// APIs return: RFC 3339, and SQL's space-separated form with or without a
// zone (without: UTC).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999"}

// writtenAt reads when a state was written: a time, its text (RFC 3339 or
// SQL's form), or Unix seconds (fractions allowed).
func writtenAt(v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case int64:
		return time.Unix(x, 0), nil
	case float64:
		return unixSeconds(x), nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return time.Time{}, fmt.Errorf("not a time: %s", x)
		}
		return unixSeconds(f), nil
	}
	s := strings.TrimSpace(text(v))
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return unixSeconds(f), nil
	}
	return time.Time{}, fmt.Errorf("not a time (want RFC 3339, SQL's timestamp or Unix seconds): %q", clip(s, 40))
}

func unixSeconds(f float64) time.Time {
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64((f-sec)*1e9))
}
