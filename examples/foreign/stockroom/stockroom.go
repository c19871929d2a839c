// Package stockroom is team D's order service, on MariaDB through
// database/sql and go-sql-driver/mysql: a merchant is known by its API key
// (Authorization: Bearer sk_…), orders and idempotency keys are InnoDB
// tables, and a key is claimed by inserting its row in the transaction that
// writes the order.
//
//	POST /v2/orders
//	Authorization: Bearer sk_live_m1
//	Idempotency-Key: <key>                      (400 without it)
//	{"sku":"A-100","qty":1,"amount":100}
//
//	→ 201 Created, Location: /v2/orders/42, {"id":42,"merchant":"m1",...}
//
// A duplicate that arrives while the first is running waits on the key
// row's lock and, once the first commits, gets its stored status, Location
// and body; a key reused with other bytes gets 422.
//
// With UpsertClaim it runs the claim of its first release: an "INSERT … ON
// DUPLICATE KEY UPDATE last_seen = NOW(6)" whose affected-row count is read
// as "0 means the key was there". MariaDB answers 2 for a row it updated,
// so every retry claims the key again and places another order.
//
// Exported API: [New], [Options].
package stockroom

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Options configure the service; the zero value is the current release.
type Options struct {
	// Tokens maps API keys to merchants (default sk_live_m1…m3 → m1…m3).
	Tokens map[string]string
	// UpsertClaim is the first release's claim (see the package doc).
	UpsertClaim bool
	// FulfilmentLatency is how long reserving the stock takes, inside the
	// transaction (default 15ms).
	FulfilmentLatency time.Duration
}

// New connects with dsn (go-sql-driver/mysql's form: user@tcp(host:port)/db),
// creates the tables if they are missing, and returns the handler and a
// function that closes the pool.
func New(ctx context.Context, dsn string, o Options) (http.Handler, func(), error) {
	if o.Tokens == nil {
		o.Tokens = map[string]string{"sk_live_m1": "m1", "sk_live_m2": "m2", "sk_live_m3": "m3"}
	}
	if o.FulfilmentLatency <= 0 {
		o.FulfilmentLatency = 15 * time.Millisecond
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(32)
	for _, ddl := range []string{
		`CREATE TABLE IF NOT EXISTS orders (
			id BIGINT AUTO_INCREMENT PRIMARY KEY,
			merchant VARCHAR(64) NOT NULL,
			idem_key VARCHAR(255) NOT NULL,
			sku VARCHAR(64) NOT NULL,
			qty INT NOT NULL,
			amount BIGINT NOT NULL,
			created_at DATETIME(6) NOT NULL DEFAULT NOW(6)
		) ENGINE=InnoDB`,
		`CREATE TABLE IF NOT EXISTS idempotency_keys (
			merchant VARCHAR(64) NOT NULL,
			idem_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
			request_sha256 CHAR(64) NOT NULL,
			status SMALLINT NULL,
			location VARCHAR(255) NULL,
			body TEXT NULL,
			last_seen DATETIME(6) NOT NULL DEFAULT NOW(6),
			PRIMARY KEY (merchant, idem_key)
		) ENGINE=InnoDB`,
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			_ = db.Close()
			return nil, nil, fmt.Errorf("create tables: %w", err)
		}
	}
	s := &server{db: db, o: o}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/orders", s.create)
	return mux, func() { _ = db.Close() }, nil
}

type server struct {
	db *sql.DB
	o  Options
}

type orderReq struct {
	SKU    string `json:"sku"`
	Qty    int    `json:"qty"`
	Amount int64  `json:"amount"`
}

type answer struct {
	status   int
	location string
	body     string
}

func (a answer) write(w http.ResponseWriter, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if a.location != "" {
		w.Header().Set("Location", a.location)
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func jsonError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	answer{status: status, body: string(b)}.write(w, false)
}

func (s *server) create(w http.ResponseWriter, r *http.Request) {
	merchant, ok := s.o.Tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		jsonError(w, http.StatusUnauthorized, "unknown API key")
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" || len(key) > 255 {
		jsonError(w, http.StatusBadRequest, "Idempotency-Key is required (at most 255 characters)")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	var req orderReq
	if err != nil || json.Unmarshal(raw, &req) != nil || req.SKU == "" || req.Qty <= 0 {
		jsonError(w, http.StatusBadRequest, "want {sku, qty, amount}")
		return
	}
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])
	a, replayed, err := s.place(r.Context(), merchant, key, hash, req)
	if err != nil {
		slog.Error("create order", "merchant", merchant, "key", key, "err", err)
		jsonError(w, http.StatusInternalServerError, "internal error")
		return
	}
	a.write(w, replayed)
}

// place claims the key and writes the order in one transaction, or answers
// with what the key's first request got.
func (s *server) place(ctx context.Context, merchant, key, hash string, req orderReq) (answer, bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return answer{}, false, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	claimed, err := s.claim(ctx, tx, merchant, key, hash)
	if err != nil {
		return answer{}, false, err
	}
	if !claimed {
		_ = tx.Rollback()
		return s.stored(ctx, merchant, key, hash)
	}
	// Reserve the stock: the warehouse API answers within the transaction.
	select {
	case <-time.After(s.o.FulfilmentLatency):
	case <-ctx.Done():
		return answer{}, false, ctx.Err()
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO orders (merchant, idem_key, sku, qty, amount) VALUES (?, ?, ?, ?, ?)",
		merchant, key, req.SKU, req.Qty, req.Amount)
	if err != nil {
		return answer{}, false, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return answer{}, false, err
	}
	body, _ := json.Marshal(map[string]any{"id": id, "merchant": merchant, "sku": req.SKU, "qty": req.Qty, "amount": req.Amount, "status": "reserved"})
	a := answer{status: http.StatusCreated, location: fmt.Sprintf("/v2/orders/%d", id), body: string(body)}
	if _, err := tx.ExecContext(ctx, "UPDATE idempotency_keys SET status = ?, location = ?, body = ? WHERE merchant = ? AND idem_key = ?",
		a.status, a.location, a.body, merchant, key); err != nil {
		return answer{}, false, err
	}
	return a, false, tx.Commit()
}

// claim inserts the key's row. A duplicate of a request in flight waits on
// the row's lock until the first commits, then fails on the primary key.
func (s *server) claim(ctx context.Context, tx *sql.Tx, merchant, key, hash string) (bool, error) {
	if s.o.UpsertClaim {
		res, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (merchant, idem_key, request_sha256) VALUES (?, ?, ?)
			ON DUPLICATE KEY UPDATE last_seen = NOW(6)`, merchant, key, hash)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n != 0, err
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO idempotency_keys (merchant, idem_key, request_sha256) VALUES (?, ?, ?)", merchant, key, hash)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 { // ER_DUP_ENTRY
		return false, nil
	}
	return err == nil, err
}

// stored is the answer of the key's first request (read after the claim's
// transaction ended, so that it sees the committed row).
func (s *server) stored(ctx context.Context, merchant, key, hash string) (answer, bool, error) {
	var (
		want     string
		status   sql.NullInt64
		location sql.NullString
		body     sql.NullString
	)
	err := s.db.QueryRowContext(ctx, "SELECT request_sha256, status, location, body FROM idempotency_keys WHERE merchant = ? AND idem_key = ?",
		merchant, key).Scan(&want, &status, &location, &body)
	if err != nil {
		return answer{}, false, err
	}
	if want != hash {
		b, _ := json.Marshal(map[string]string{"error": "this Idempotency-Key was used with another request"})
		return answer{status: http.StatusUnprocessableEntity, body: string(b)}, false, nil
	}
	if !status.Valid {
		// Cannot happen: the row and its answer commit together.
		return answer{}, false, errors.New("idempotency key without an answer")
	}
	return answer{status: int(status.Int64), location: location.String, body: body.String}, true, nil
}
