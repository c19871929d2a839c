package reference

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Key record states (seed 002 §四: the three-state machine).
const (
	stateProcessing = "processing"
	stateSucceeded  = "succeeded"
	stateFailed     = "failed"
)

// routeOrders is the scope (method + route) of the orders endpoint.
const routeOrders = "POST /v1/orders"

// sqlClaim is the claim: INSERT … ON CONFLICT DO NOTHING on the unique key
// (tenant, scope, key), before any business write. The unique index is the
// only arbiter: two racing inserts cannot both succeed. When the insert
// loses, the same statement returns the existing record, so a replay costs
// one round trip. If the conflicting row was committed after this
// statement's snapshot was taken, neither branch returns a row; the caller
// then retries.
const sqlClaim = `WITH claim AS (
	INSERT INTO idempotency_keys (tenant, scope, idem_key, fingerprint, state, lease_token, lease_expires_at)
	VALUES ($1, $2, $3, $4, 'processing', $5, now() + $6::float8 * interval '1 second')
	ON CONFLICT (tenant, scope, idem_key) DO NOTHING
	RETURNING true AS claimed
)
SELECT true, '', '', NULL::int, NULL::jsonb, NULL::bytea, NULL::timestamptz, now() FROM claim
UNION ALL
SELECT false, k.fingerprint, k.state, k.status_code, k.response_headers, k.response_body, k.lease_expires_at, now()
FROM idempotency_keys k
WHERE k.tenant = $1 AND k.scope = $2 AND k.idem_key = $3 AND NOT EXISTS (SELECT 1 FROM claim)`

// sqlLookup reads one record.
const sqlLookup = `SELECT fingerprint, state, status_code, response_headers, response_body, lease_expires_at, now(), created_at, updated_at
FROM idempotency_keys WHERE tenant = $1 AND scope = $2 AND idem_key = $3`

// sqlInsertUnchecked is the check-then-insert mutant's insert: its result
// is ignored, because the mutant already "knows" from its SELECT that the
// key is free.
const sqlInsertUnchecked = `INSERT INTO idempotency_keys (tenant, scope, idem_key, fingerprint, state, lease_expires_at)
VALUES ($1, $2, $3, $4, 'processing', now() + $5::float8 * interval '1 second')
ON CONFLICT (tenant, scope, idem_key) DO NOTHING`

// sqlTakeover re-claims a record whose holder is presumed dead (lease
// expired) or which a system error released (failed, nothing stored). A
// new lease token fences the previous holder out: its completion matches
// no row and its transaction rolls back.
const sqlTakeover = `UPDATE idempotency_keys
SET state = 'processing', lease_token = $4, lease_expires_at = now() + $5::float8 * interval '1 second', updated_at = now()
WHERE tenant = $1 AND scope = $2 AND idem_key = $3
  AND ((state = 'processing' AND lease_expires_at < now()) OR (state = 'failed' AND status_code IS NULL))`

// sqlComplete stores the outcome, fenced by the lease token, inside the
// business transaction (seed 002 §四 细节一: business commit and
// "succeeded" in one transaction). It runs before the business inserts, so
// the record row is locked for the rest of the transaction: a takeover
// waits for the commit and then sees the final state.
const sqlComplete = `UPDATE idempotency_keys
SET state = $5, status_code = $6, response_headers = $7, response_body = $8, lease_expires_at = NULL, updated_at = now()
WHERE tenant = $1 AND scope = $2 AND idem_key = $3 AND lease_token = $4 AND state = 'processing'`

// sqlRecordUnfenced is how the mutants without a lease record an outcome:
// an upsert that trusts whoever writes last.
const sqlRecordUnfenced = `INSERT INTO idempotency_keys (tenant, scope, idem_key, fingerprint, state, status_code, response_headers, response_body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (tenant, scope, idem_key) DO UPDATE
SET state = excluded.state, status_code = excluded.status_code, response_headers = excluded.response_headers,
    response_body = excluded.response_body, lease_expires_at = NULL, updated_at = now()`

// sqlRelease marks a record failed with nothing stored after a system
// error, so the same key may execute again.
const sqlRelease = `UPDATE idempotency_keys
SET state = 'failed', status_code = NULL, response_headers = NULL, response_body = NULL, lease_expires_at = NULL, updated_at = now()
WHERE tenant = $1 AND scope = $2 AND idem_key = $3 AND lease_token = $4 AND state = 'processing'`

// keyRecord is a stored idempotency record.
type keyRecord struct {
	fingerprint string
	state       string
	status      *int32
	headers     []byte // JSON object: header name → value
	body        []byte
	leaseExpiry *time.Time
	now         time.Time // the database clock when read
	createdAt   time.Time
	updatedAt   time.Time
}

// replayable reports whether the record holds a response to replay: a
// success or a stored business failure.
func (k *keyRecord) replayable() bool { return k.status != nil && k.state != stateProcessing }

// recordID is the record's primary key.
type recordID struct {
	tenant string // "" under the global-namespace mutant
	scope  string
	key    string
}

// lease is what an attempt holds while it executes.
type lease struct {
	// token fences the completion; "" means an unfenced mutant path that
	// records its outcome with an upsert.
	token string
	// noRecord: the no-key mutant keeps no record at all.
	noRecord bool
	// afterCommit: the execute-then-record mutant writes the record only
	// after the business transaction committed.
	afterCommit bool
}

// storedResponse is a response as stored and replayed.
type storedResponse struct {
	status  int
	headers []byte // JSON object
	body    []byte
}

// claim tries to take the key. It returns the lease when this attempt
// owns the execution, else the existing record (rec == nil and lease ==
// nil: lost a snapshot race, try again).
func (s *server) claim(ctx context.Context, id recordID, fp string) (*lease, *keyRecord, error) {
	leaseSecs := ptr(s.cfg.Lease.Seconds())
	if s.m.is(mutantNoLease) {
		// MUTANT no-lease: 'processing' gets no expiry, so when its holder
		// dies nobody may ever take over.
		leaseSecs = nil
	}
	tok := newToken()
	rows, err := s.pool.Query(ctx, sqlClaim, id.tenant, id.scope, id.key, fp, tok, leaseSecs)
	if err != nil {
		return nil, nil, fmt.Errorf("claim: %w", err)
	}
	var claimed bool
	rec := &keyRecord{}
	found := false
	for rows.Next() {
		// A replay is this statement and little else, so its row is read
		// straight off the wire (see decodeClaimRow); anything unexpected
		// goes through pgx's Scan, which also reports every error.
		var ok bool
		if claimed, ok = decodeClaimRow(rows.FieldDescriptions(), rows.RawValues(), rec); !ok {
			if err := rows.Scan(&claimed, &rec.fingerprint, &rec.state, &rec.status, &rec.headers, &rec.body, &rec.leaseExpiry, &rec.now); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("claim: scan: %w", err)
			}
		}
		found = true
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("claim: %w", err)
	}
	switch {
	case found && claimed:
		return &lease{token: tok}, nil, nil
	case found:
		return nil, rec, nil
	default:
		return nil, nil, nil
	}
}

// claimColumns are the type OIDs of sqlClaim's columns: claimed, then the
// record (fingerprint, state, status_code, response_headers,
// response_body, lease_expires_at, now()).
var claimColumns = [...]uint32{pgtype.BoolOID, pgtype.TextOID, pgtype.TextOID, pgtype.Int4OID, pgtype.JSONBOID,
	pgtype.ByteaOID, pgtype.TimestamptzOID, pgtype.TimestamptzOID}

// decodeClaimRow reads one row of sqlClaim from its wire values into rec
// and returns the claimed column. pgx's Scan plans a conversion per column
// per query, which for a replay cost about as much CPU as the rest of the
// handler; these eight columns have fixed types, so their wire forms are
// decoded here directly, with the same results (a differential test holds
// the two to it). pgx asks for text and jsonb in text format (the bytes
// as they are; jsonb's binary form is a version byte 1 before them) and
// for the others in binary. ok is false when a column has another type or
// format, or a value is malformed or infinite: the caller then uses Scan,
// which also reports every error. The headers and body are copied (into
// one allocation): the wire buffer is reused by the next row.
func decodeClaimRow(fds []pgconn.FieldDescription, vals [][]byte, rec *keyRecord) (claimed, ok bool) {
	if len(fds) != len(claimColumns) || len(vals) != len(claimColumns) {
		return false, false
	}
	for i, fd := range fds {
		if fd.DataTypeOID != claimColumns[i] {
			return false, false
		}
		switch fd.Format {
		case pgtype.TextFormatCode:
			if fd.DataTypeOID != pgtype.TextOID && fd.DataTypeOID != pgtype.JSONBOID {
				return false, false
			}
		case pgtype.BinaryFormatCode:
		default:
			return false, false
		}
	}
	if len(vals[0]) != 1 || vals[1] == nil || vals[2] == nil || vals[7] == nil {
		return false, false
	}
	var status *int32
	if v := vals[3]; v != nil {
		if len(v) != 4 {
			return false, false
		}
		n := int32(binary.BigEndian.Uint32(v))
		status = &n
	}
	hdr := vals[4]
	if hdr != nil && fds[4].Format == pgtype.BinaryFormatCode {
		if len(hdr) < 1 || hdr[0] != 1 {
			return false, false
		}
		hdr = hdr[1:]
	}
	var leaseExpiry *time.Time
	if vals[6] != nil {
		t, ok := wireTimestamptz(vals[6])
		if !ok {
			return false, false
		}
		leaseExpiry = &t
	}
	now, ok := wireTimestamptz(vals[7])
	if !ok {
		return false, false
	}
	*rec = keyRecord{fingerprint: string(vals[1]), state: wireState(vals[2]), status: status, leaseExpiry: leaseExpiry, now: now}
	if hdr != nil || vals[5] != nil {
		buf := make([]byte, 0, len(hdr)+len(vals[5]))
		if hdr != nil {
			buf = append(buf, hdr...)
			rec.headers = buf[:len(hdr):len(hdr)]
		}
		if vals[5] != nil {
			buf = append(buf, vals[5]...)
			rec.body = buf[len(hdr):]
		}
	}
	return vals[0][0] != 0, true
}

// wireState returns one of the three state constants for their bytes
// (no allocation), or a copy of anything else.
func wireState(v []byte) string {
	for _, s := range [...]string{stateSucceeded, stateProcessing, stateFailed} {
		if string(v) == s {
			return s
		}
	}
	return string(v)
}

// wireTimestamptz decodes a non-NULL binary timestamptz (microseconds since
// 2000-01-01 UTC) as pgx does; ok is false for a malformed or infinite
// value.
func wireTimestamptz(v []byte) (time.Time, bool) {
	if len(v) != 8 {
		return time.Time{}, false
	}
	us := int64(binary.BigEndian.Uint64(v))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return time.Time{}, false
	}
	const y2k = 946_684_800 * 1_000_000 // 2000-01-01 in microseconds since the Unix epoch
	return time.Unix(y2k/1_000_000+us/1_000_000, (y2k%1_000_000*1_000)+(us%1_000_000*1_000)), true
}

// lookup reads a record from pool (the primary, or the replica under the
// replica-read mutant). It returns nil when there is none.
func lookup(ctx context.Context, pool *pgxpool.Pool, id recordID) (*keyRecord, error) {
	rec := &keyRecord{}
	err := pool.QueryRow(ctx, sqlLookup, id.tenant, id.scope, id.key).Scan(
		&rec.fingerprint, &rec.state, &rec.status, &rec.headers, &rec.body, &rec.leaseExpiry, &rec.now, &rec.createdAt, &rec.updatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	return rec, nil
}

// takeover re-claims an expired or released record; ok is false when
// another attempt got there first (or the record changed state).
func (s *server) takeover(ctx context.Context, id recordID) (*lease, bool, error) {
	tok := newToken()
	tag, err := s.pool.Exec(ctx, sqlTakeover, id.tenant, id.scope, id.key, tok, s.cfg.Lease.Seconds())
	if err != nil {
		return nil, false, fmt.Errorf("takeover: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil, false, nil
	}
	return &lease{token: tok}, true, nil
}

// record stores resp under id inside tx, as the lease dictates.
func (s *server) record(ctx context.Context, tx pgx.Tx, id recordID, fp string, l *lease, state string, resp storedResponse) error {
	switch {
	case l.noRecord, l.afterCommit:
		return nil
	case l.token == "":
		if _, err := tx.Exec(ctx, sqlRecordUnfenced, id.tenant, id.scope, id.key, fp, state, resp.status, resp.headers, resp.body); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		return nil
	}
	tag, err := tx.Exec(ctx, sqlComplete, id.tenant, id.scope, id.key, l.token, state, resp.status, resp.headers, resp.body)
	if err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return errLostLease
	}
	return nil
}

// release marks the record failed-and-retryable after a system error. It
// runs detached from the request (which may be what failed) with its own
// short timeout; if it cannot run, the lease expiry does the same later.
func (s *server) release(ctx context.Context, id recordID, l *lease) {
	if l == nil || l.token == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := s.pool.Exec(ctx, sqlRelease, id.tenant, id.scope, id.key, l.token); err != nil {
		s.log.Warn("release after system error failed; the lease will expire", "error", err.Error())
	}
}
