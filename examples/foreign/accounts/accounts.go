// Package accounts is team C's order service: orders belong to the account
// in the URL, and everything lives in Postgres — the orders table and an
// idempotency_records table whose rows are claimed with an insert before the
// order is placed.
//
//	POST /accounts/{account}/orders
//	Idempotency-Key: <key>
//	{"sku":"A-100","qty":1,"amount":100}
//
//	→ 201 Created, Location: /accounts/t1/orders/42, {"id":42,"account":"t1",...}
//
// The stored request is compared as jsonb (key order and spacing do not
// matter, types do): another request under a used key gets 417; a duplicate
// of a request still running gets 409 with Retry-After: 1; a missing key
// gets 428. Replays repeat the stored status, Location and body.
//
// Exported API: [New], [Options].
package accounts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configure the service; the zero value is the current release.
type Options struct {
	// SelectThenInsert is the first release's claim: look the key up, then
	// insert the record and the order in one transaction. Two copies of a
	// request both find nothing; the second insert waits for the first's
	// transaction and fails on the primary key.
	SelectThenInsert bool
	// KeyOnlyIndex is the first migration's schema: idempotency records are
	// unique by key alone, not by (account, key).
	KeyOnlyIndex bool
	// PaymentLatency is how long the payment provider takes (default 20ms).
	PaymentLatency time.Duration
}

// New connects, creates the tables if they are missing, and returns the
// handler. The pool lives as long as ctx.
func New(ctx context.Context, dsn string, o Options) (http.Handler, error) {
	if o.PaymentLatency <= 0 {
		o.PaymentLatency = 20 * time.Millisecond
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, err
	}
	uniq := "PRIMARY KEY (account, idem_key)"
	if o.KeyOnlyIndex {
		uniq = "PRIMARY KEY (idem_key)"
	}
	schema := `
CREATE TABLE IF NOT EXISTS idempotency_records (
  account    text NOT NULL,
  idem_key   text NOT NULL,
  request    jsonb NOT NULL,
  path       text NOT NULL,
  state      text NOT NULL DEFAULT 'started',
  status     int,
  location   text,
  body       text,
  created_at timestamptz NOT NULL DEFAULT now(),
  ` + uniq + `
);
CREATE TABLE IF NOT EXISTS orders (
  id         bigserial PRIMARY KEY,
  account    text NOT NULL,
  idem_key   text,
  sku        text NOT NULL,
  qty        int NOT NULL,
  amount     bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);`
	if _, err := pool.Exec(ctx, schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	context.AfterFunc(ctx, pool.Close)
	s := &server{db: pool, opts: o}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /accounts/{account}/orders", s.create)
	return mux, nil
}

type server struct {
	db   *pgxpool.Pool
	opts Options
}

type orderReq struct {
	SKU    string `json:"sku"`
	Qty    int    `json:"qty"`
	Amount int64  `json:"amount"`
}

type stored struct {
	sameRequest bool
	state       string
	status      *int
	location    *string
	body        *string
}

func (s *server) create(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	account := r.PathValue("account")
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		jsonError(w, http.StatusPreconditionRequired, "missing Idempotency-Key")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req orderReq
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil {
		jsonError(w, http.StatusBadRequest, "malformed order")
		return
	}
	if s.opts.SelectThenInsert {
		s.createV1(ctx, w, account, key, r.URL.Path, raw, req)
		return
	}
	tag, err := s.db.Exec(ctx, `INSERT INTO idempotency_records (account, idem_key, request, path)
		VALUES ($1, $2, $3::jsonb, $4) ON CONFLICT DO NOTHING`, account, key, string(raw), r.URL.Path)
	if err != nil {
		s.fail(w, "claim", err)
		return
	}
	if tag.RowsAffected() == 0 {
		s.answerExisting(ctx, w, account, key, r.URL.Path, raw)
		return
	}
	time.Sleep(s.opts.PaymentLatency) // the payment provider authorises the amount
	var ans placed
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) (err error) {
		ans, err = s.placeAndRecord(ctx, tx, account, key, req)
		return err
	})
	if err != nil {
		// Give the key back so that a retry can succeed.
		_, _ = s.db.Exec(context.WithoutCancel(ctx), `DELETE FROM idempotency_records WHERE account = $1 AND idem_key = $2 AND state = 'started'`, account, key)
		s.fail(w, "place order", err)
		return
	}
	ans.write(w)
}

// createV1 is the first release's flow (Options.SelectThenInsert).
func (s *server) createV1(ctx context.Context, w http.ResponseWriter, account, key, path string, raw []byte, req orderReq) {
	var n int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM idempotency_records WHERE account = $1 AND idem_key = $2`, account, key).Scan(&n); err != nil {
		s.fail(w, "lookup", err)
		return
	}
	if n > 0 {
		s.answerExisting(ctx, w, account, key, path, raw)
		return
	}
	var ans placed
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) (err error) {
		if _, err := tx.Exec(ctx, `INSERT INTO idempotency_records (account, idem_key, request, path) VALUES ($1, $2, $3::jsonb, $4)`,
			account, key, string(raw), path); err != nil {
			return err
		}
		time.Sleep(s.opts.PaymentLatency)
		ans, err = s.placeAndRecord(ctx, tx, account, key, req)
		return err
	})
	if err != nil {
		s.fail(w, "create", err)
		return
	}
	ans.write(w)
}

// placed is the answer to a newly placed order.
type placed struct {
	location string
	body     []byte
}

func (p placed) write(w http.ResponseWriter) {
	w.Header().Set("Location", p.location)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(p.body)
}

// placeAndRecord inserts the order and stores its answer in tx.
func (s *server) placeAndRecord(ctx context.Context, tx pgx.Tx, account, key string, req orderReq) (placed, error) {
	var id int64
	var created time.Time
	if err := tx.QueryRow(ctx, `INSERT INTO orders (account, idem_key, sku, qty, amount) VALUES ($1, $2, $3, $4, $5) RETURNING id, created_at`,
		account, key, req.SKU, req.Qty, req.Amount).Scan(&id, &created); err != nil {
		return placed{}, err
	}
	body, _ := json.Marshal(map[string]any{"id": id, "account": account, "sku": req.SKU, "qty": req.Qty,
		"amount": req.Amount, "state": "placed", "created_at": created.UTC().Format(time.RFC3339Nano)})
	loc := fmt.Sprintf("/accounts/%s/orders/%d", account, id)
	if _, err := tx.Exec(ctx, `UPDATE idempotency_records SET state = 'finished', status = 201, location = $3, body = $4
		WHERE account = $1 AND idem_key = $2`, account, key, loc, string(body)); err != nil {
		return placed{}, err
	}
	return placed{location: loc, body: body}, nil
}

// answerExisting answers a request whose key is already recorded.
func (s *server) answerExisting(ctx context.Context, w http.ResponseWriter, account, key, path string, raw []byte) {
	lookup := `SELECT request = $3::jsonb AND path = $4, state, status, location, body FROM idempotency_records WHERE account = $1 AND idem_key = $2`
	args := []any{account, key, string(raw), path}
	if s.opts.KeyOnlyIndex {
		lookup = `SELECT request = $2::jsonb AND path = $3, state, status, location, body FROM idempotency_records WHERE idem_key = $1`
		args = args[1:]
	}
	var st stored
	err := s.db.QueryRow(ctx, lookup, args...).Scan(&st.sameRequest, &st.state, &st.status, &st.location, &st.body)
	if errors.Is(err, pgx.ErrNoRows) {
		// The owner gave the key back between our insert and this read.
		w.Header().Set("Retry-After", "1")
		jsonError(w, http.StatusConflict, "request in progress, retry")
		return
	}
	if err != nil {
		s.fail(w, "lookup", err)
		return
	}
	switch {
	case !st.sameRequest:
		jsonError(w, http.StatusExpectationFailed, "Idempotency-Key already used for a different request")
	case st.state != "finished":
		w.Header().Set("Retry-After", "1")
		jsonError(w, http.StatusConflict, "request in progress, retry")
	default:
		if st.location != nil {
			w.Header().Set("Location", *st.location)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(*st.status)
		_, _ = io.WriteString(w, *st.body)
	}
}

func (s *server) fail(w http.ResponseWriter, what string, err error) {
	slog.Error("accounts: "+what, "err", err)
	jsonError(w, http.StatusInternalServerError, "internal error")
}

func jsonError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
