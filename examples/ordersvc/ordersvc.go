package ordersvc

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configure [New].
type Options struct {
	// Buggy makes the classic check-then-insert mistake (see the package
	// documentation) instead of claiming the key in the order's transaction.
	Buggy bool

	_ struct{}
}

// The key table's primary key is what makes the correct mode correct: two
// requests cannot both claim (tenant, idem_key). The buggy mode's table has
// none, as the classic mistake's tables usually don't.
const (
	schemaOrders = `CREATE TABLE IF NOT EXISTS orders (
	id       bigserial PRIMARY KEY,
	tenant   text NOT NULL,
	idem_key text NOT NULL,
	body     jsonb NOT NULL)`
	schemaKeys = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	tenant      text NOT NULL,
	idem_key    text NOT NULL,
	fingerprint bytea NOT NULL,
	status      int NOT NULL,
	body        bytea NOT NULL,
	PRIMARY KEY (tenant, idem_key))`
	schemaKeysBuggy = `CREATE TABLE IF NOT EXISTS idempotency_keys (
	tenant      text NOT NULL,
	idem_key    text NOT NULL,
	fingerprint bytea NOT NULL,
	status      int NOT NULL,
	body        bytea NOT NULL)`
)

// New connects to dsn, creates the tables if they are missing and returns
// the API's handler. The connection pool lives until ctx is done.
func New(ctx context.Context, dsn string, opts Options) (http.Handler, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("ordersvc: connect: %w", err)
	}
	keys := schemaKeys
	if opts.Buggy {
		keys = schemaKeysBuggy
	}
	for _, q := range []string{schemaOrders, keys} {
		if _, err := pool.Exec(ctx, q); err != nil {
			pool.Close()
			return nil, fmt.Errorf("ordersvc: create tables: %w", err)
		}
	}
	context.AfterFunc(ctx, pool.Close)
	s := &service{db: pool, buggy: opts.Buggy}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", s.createOrder)
	return mux, nil
}

type service struct {
	db    *pgxpool.Pool
	buggy bool
}

// stored is a response as it was first sent, so that a retry gets the same
// bytes and not a re-rendering that could differ.
type stored struct {
	fingerprint []byte
	status      int
	body        []byte
}

func (s *service) createOrder(w http.ResponseWriter, r *http.Request) {
	tenant, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer tok-")
	if !ok || tenant == "" {
		writeJSON(w, http.StatusUnauthorized, []byte(`{"error":"want Authorization: Bearer tok-<tenant>"}`))
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" || len(key) > 255 {
		writeJSON(w, http.StatusBadRequest, []byte(`{"error":"an Idempotency-Key header (1-255 bytes) is required"}`))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil || !json.Valid(body) {
		writeJSON(w, http.StatusBadRequest, []byte(`{"error":"the body must be JSON"}`))
		return
	}
	// The fingerprint tells a retry (same body) from a reuse of the key for
	// another request (a client bug), which must not get this response.
	sum := sha256.Sum256(body)
	create := s.create
	if s.buggy {
		create = s.createBuggy
	}
	res, err := create(r.Context(), tenant, key, sum[:], body)
	switch {
	case errors.Is(err, errInFlight):
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusConflict, []byte(`{"error":"a request with this key is still running; retry later"}`))
	case err != nil:
		// Nothing was committed (or we cannot know): the client may retry
		// with the same key, which is what the key is for.
		writeJSON(w, http.StatusInternalServerError, []byte(`{"error":"internal error"}`))
	case string(res.fingerprint) != string(sum[:]):
		writeJSON(w, http.StatusUnprocessableEntity, []byte(`{"error":"this Idempotency-Key was used with a different body"}`))
	default:
		writeJSON(w, res.status, res.body)
	}
}

var errInFlight = errors.New("in flight")

// create claims the key and creates the order in one transaction, so the
// key is recorded if and only if the order exists, and nobody ever sees a
// claimed key without its response.
func (s *service) create(ctx context.Context, tenant, key string, fingerprint, body []byte) (stored, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return stored{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// A twin request that is still running holds its uncommitted key row,
	// and our INSERT waits for it. Waiting a little is fine; holding a
	// connection for as long as the twin runs is not: give up and say 409.
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '500ms'`); err != nil {
		return stored{}, err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (tenant, idem_key, fingerprint, status, body)
		VALUES ($1, $2, $3, 0, '') ON CONFLICT DO NOTHING`, tenant, key, fingerprint)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
		return stored{}, errInFlight
	}
	if err != nil {
		return stored{}, err
	}
	if tag.RowsAffected() == 0 {
		// Someone committed this key before us: answer what they answered.
		return s.lookup(ctx, tx, tenant, key)
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO orders (tenant, idem_key, body) VALUES ($1, $2, $3) RETURNING id`,
		tenant, key, string(body)).Scan(&id); err != nil {
		return stored{}, err
	}
	res := stored{fingerprint: fingerprint, status: http.StatusCreated, body: orderJSON(id, body)}
	if _, err := tx.Exec(ctx, `UPDATE idempotency_keys SET status = $3, body = $4 WHERE tenant = $1 AND idem_key = $2`,
		tenant, key, res.status, res.body); err != nil {
		return stored{}, err
	}
	return res, tx.Commit(ctx)
}

// createBuggy is the classic mistake, kept for idemchaos to catch: between
// the lookup and the INSERT of the key, a second copy of the request finds
// nothing either, and creates a second order.
func (s *service) createBuggy(ctx context.Context, tenant, key string, fingerprint, body []byte) (stored, error) {
	res, err := s.lookup(ctx, s.db, tenant, key)
	if err == nil {
		return res, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return stored{}, err
	}
	var id int64
	if err := s.db.QueryRow(ctx, `INSERT INTO orders (tenant, idem_key, body) VALUES ($1, $2, $3) RETURNING id`,
		tenant, key, string(body)).Scan(&id); err != nil {
		return stored{}, err
	}
	res = stored{fingerprint: fingerprint, status: http.StatusCreated, body: orderJSON(id, body)}
	_, err = s.db.Exec(ctx, `INSERT INTO idempotency_keys (tenant, idem_key, fingerprint, status, body) VALUES ($1, $2, $3, $4, $5)`,
		tenant, key, fingerprint, res.status, res.body)
	return res, err
}

func (s *service) lookup(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenant, key string) (stored, error) {
	var res stored
	err := q.QueryRow(ctx, `SELECT fingerprint, status, body FROM idempotency_keys WHERE tenant = $1 AND idem_key = $2 LIMIT 1`,
		tenant, key).Scan(&res.fingerprint, &res.status, &res.body)
	return res, err
}

func orderJSON(id int64, body []byte) []byte {
	b, _ := json.Marshal(struct {
		ID    int64           `json:"id"`
		Order json.RawMessage `json:"order"`
	}{id, body})
	return b
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
