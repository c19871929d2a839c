package reference

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemchaos/idemchaos/harness/pgtest"
)

// TestDecodeClaimRow_SameAsScan runs the claim statement through a pool
// opened as the service opens it, over records of every shape, and holds
// decodeClaimRow to what pgx's Scan makes of the very same row; it also
// requires the direct path to be taken, so a pgx upgrade that changes the
// wire formats shows here instead of silently falling back.
func TestDecodeClaimRow_SameAsScan(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Database(t)
	if err := Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	pool, err := openPool(ctx, dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const ins = `INSERT INTO idempotency_keys (tenant, scope, idem_key, fingerprint, state, status_code, response_headers, response_body, lease_expires_at)
		VALUES ('t', 's', $1, $2, $3, $4, $5, $6, $7)`
	past := time.Date(1999, 12, 31, 23, 59, 59, 123456000, time.UTC) // before 2000: a negative wire value
	soon := time.Now().Add(time.Hour)
	records := []struct {
		key, fp, state string
		status         *int32
		headers        *string
		body           []byte
		lease          *time.Time
	}{
		{"replay", "f1", stateSucceeded, ptr[int32](201), ptr(`{"Content-Type":"application/json","Location":"/v1/orders/ord_1"}`), []byte(`{"id":"ord_1"}`), nil},
		{"escapes", "f2", stateSucceeded, ptr[int32](201), ptr(`{"X-Note":"caf\u00e9 \"q\" \\ <b>"}`), []byte("\x00\xff binary"), nil},
		{"stored-402", "f3", stateFailed, ptr[int32](402), ptr(`{}`), []byte{}, nil},
		{"processing", "f4", stateProcessing, nil, nil, nil, &soon},
		{"expired", "f5", stateProcessing, nil, nil, nil, &past},
		{"released", "f6", stateFailed, nil, nil, nil, nil},
		{"headers-only", "", stateSucceeded, ptr[int32](204), ptr(`{"A":"b"}`), nil, nil},
	}
	for _, r := range records {
		if _, err := pool.Exec(ctx, ins, r.key, r.fp, r.state, r.status, r.headers, r.body, r.lease); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"a-new-key"}
	for _, r := range records {
		keys = append(keys, r.key)
	}
	for _, key := range keys {
		rows, err := pool.Query(ctx, sqlClaim, "t", "s", key, "fp", "tok", 30.0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
			var direct keyRecord
			claimed, ok := decodeClaimRow(rows.FieldDescriptions(), rows.RawValues(), &direct)
			if !ok {
				t.Errorf("%s: the direct decoding refused the row (fields %+v)", key, rows.FieldDescriptions())
			}
			var scanned keyRecord
			var scannedClaimed bool
			if err := rows.Scan(&scannedClaimed, &scanned.fingerprint, &scanned.state, &scanned.status, &scanned.headers, &scanned.body, &scanned.leaseExpiry, &scanned.now); err != nil {
				t.Errorf("%s: scan: %v", key, err) // not Fatal: the open rows would hold the pool's Close
				continue
			}
			if claimed != scannedClaimed || !reflect.DeepEqual(direct, scanned) {
				t.Errorf("%s: direct %v %+v\nscanned %v %+v", key, claimed, direct, scannedClaimed, scanned)
			}
			if claimed != (key == "a-new-key") {
				t.Errorf("%s: claimed = %v", key, claimed)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("%s: %d rows", key, n)
		}
	}
}

// TestDecodeClaimRow_RefusesTheUnexpected: a text-format column, another
// type, a malformed or an infinite value are left to Scan.
func TestDecodeClaimRow_RefusesTheUnexpected(t *testing.T) {
	fds := make([]pgconn.FieldDescription, len(claimColumns))
	for i, oid := range claimColumns {
		fds[i] = pgconn.FieldDescription{DataTypeOID: oid, Format: pgtype.BinaryFormatCode}
	}
	ts := []byte{0, 0, 0, 0, 0, 0, 0, 1}
	good := func() [][]byte {
		return [][]byte{{0}, []byte("fp"), []byte("succeeded"), {0, 0, 0, 201}, []byte("\x01{}"), []byte("body"), nil, ts}
	}
	var rec keyRecord
	if _, ok := decodeClaimRow(fds, good(), &rec); !ok || *rec.status != 201 || string(rec.headers) != "{}" || string(rec.body) != "body" {
		t.Fatalf("the well-formed row: ok %v, %+v", ok, rec)
	}
	textJSON := append([]pgconn.FieldDescription(nil), fds...)
	textJSON[4].Format = pgtype.TextFormatCode
	v := good()
	v[4] = []byte(`{"A":"b"}`)
	if _, ok := decodeClaimRow(textJSON, v, &rec); !ok || string(rec.headers) != `{"A":"b"}` {
		t.Fatalf("jsonb in text format: ok %v, %+v", ok, rec)
	}
	text := append([]pgconn.FieldDescription(nil), fds...)
	text[3].Format = pgtype.TextFormatCode
	text6 := append([]pgconn.FieldDescription(nil), fds...)
	text6[6].Format = pgtype.TextFormatCode
	other := append([]pgconn.FieldDescription(nil), fds...)
	other[1].DataTypeOID = pgtype.VarcharOID
	cases := map[string]struct {
		fds  []pgconn.FieldDescription
		edit func(v [][]byte)
	}{
		"text int4":         {text, func([][]byte) {}},
		"text timestamptz":  {text6, func([][]byte) {}},
		"varchar":           {other, func([][]byte) {}},
		"fewer columns":     {fds[:7], func([][]byte) {}},
		"short int4":        {fds, func(v [][]byte) { v[3] = []byte{1} }},
		"jsonb version 2":   {fds, func(v [][]byte) { v[4] = []byte("\x02{}") }},
		"empty jsonb":       {fds, func(v [][]byte) { v[4] = []byte{} }},
		"infinite lease":    {fds, func(v [][]byte) { v[6] = []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} }},
		"-infinite lease":   {fds, func(v [][]byte) { v[6] = []byte{0x80, 0, 0, 0, 0, 0, 0, 0} }},
		"short timestamp":   {fds, func(v [][]byte) { v[7] = []byte{1, 2} }},
		"null now":          {fds, func(v [][]byte) { v[7] = nil }},
		"null claimed":      {fds, func(v [][]byte) { v[0] = nil }},
		"null fingerprint":  {fds, func(v [][]byte) { v[1] = nil }},
		"two-byte claimed":  {fds, func(v [][]byte) { v[0] = []byte{0, 1} }},
		"null state":        {fds, func(v [][]byte) { v[2] = nil }},
		"seven-byte moment": {fds, func(v [][]byte) { v[6] = make([]byte, 7) }},
	}
	for name, c := range cases {
		v := good()
		c.edit(v)
		if _, ok := decodeClaimRow(c.fds, v[:len(c.fds)], &keyRecord{}); ok {
			t.Errorf("%s: decoded", name)
		}
	}
}
