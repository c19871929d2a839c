package reference

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Header names of the API, in Go's canonical form (X-Request-Id is
// X-Request-ID on the wire to any HTTP client): a canonical name is looked
// up and set as is, any other is re-canonicalised into a new string on
// every Get and Set.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	headerRequestID      = "X-Request-Id"
	headerIntent         = "X-Intent-Id"
)

// maxBodyBytes is the request body limit (413 above it).
const maxBodyBytes = 1 << 20

// server is one running reference service.
type server struct {
	cfg     Config
	m       mutant
	log     *slog.Logger
	pool    *pgxpool.Pool
	replica *pgxpool.Pool // only for the replica-read mutant
	fp      *failpoints
	metrics *metrics
	tokens  []tokenEntry
	// provider is the sha256 of the provider token.
	provider [sha256.Size]byte
}

type tokenEntry struct {
	hash   [sha256.Size]byte
	tenant string
}

// Serve runs the reference service until ctx is done, then shuts down
// gracefully and returns nil. It migrates the schema, creates the
// configured tenants' accounts, opens the listener and reports its address
// through [Config.Ready], [Config.AddrFile] and a "listening" log line.
// Logs are JSON lines (log/slog) written to logs.
//
// Serve refuses to start (returns [ErrRetentionTooShort]) when
// cfg.Retention < cfg.MaxRetryWindow, unless the short-retention mutant is on.
func Serve(ctx context.Context, cfg Config, logs io.Writer) error {
	m, err := parseMutant(cfg.Mutant)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(m); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// Logs thrown away are not formatted either (the benchmark serves with
	// io.Discard): the handler reports itself disabled, so the access line
	// costs one check instead of a JSON encoding per request.
	var handler slog.Handler = slog.DiscardHandler
	if logs != io.Discard {
		handler = slog.NewJSONHandler(logs, nil)
	}
	log := slog.New(handler).With("service", "reference")
	if m != mutantNone {
		log = log.With("mutant", string(m))
	}
	if err := Migrate(ctx, cfg.DSN); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	pool, err := openPool(ctx, cfg.DSN, cfg.MaxConns)
	if err != nil {
		return fmt.Errorf("serve: primary: %w", err)
	}
	defer pool.Close()
	s := &server{cfg: cfg, m: m, log: log, pool: pool, metrics: newMetrics()}
	s.fp = newFailpoints(cfg.Failpoints, func(name string) {
		log.Error("failpoint crash: SIGKILL self", "failpoint", name)
		selfKill(name)
	})
	s.fp.allow = cfg.DebugAllow
	defer s.fp.close()
	if m.is(mutantReplicaRead) {
		s.replica, err = openPool(ctx, cfg.ReplicaDSN, cfg.MaxConns)
		if err != nil {
			return fmt.Errorf("serve: replica: %w", err)
		}
		defer s.replica.Close()
	} else if cfg.ReplicaDSN != "" {
		log.Info("replica DSN ignored: idempotency decisions always read the primary")
	}
	for tok, tenant := range cfg.Tokens {
		s.tokens = append(s.tokens, tokenEntry{hash: sha256.Sum256([]byte(tok)), tenant: tenant})
	}
	s.provider = sha256.Sum256([]byte(cfg.ProviderToken))
	if err := s.seedAccounts(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("serve: listen: %w", err)
	}
	addr := ln.Addr().String()
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	log.Info("listening", "addr", addr, "failpoints", cfg.Failpoints, "retention", cfg.Retention.String(), "max_retry_window", cfg.MaxRetryWindow.String(), "lease", cfg.Lease.String())
	if cfg.AddrFile != "" {
		if err := writeFileAtomic(cfg.AddrFile, []byte(addr+"\n")); err != nil {
			ln.Close()
			return fmt.Errorf("serve: %w", err)
		}
	}
	if cfg.Ready != nil {
		cfg.Ready(addr)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	purgeDone := make(chan struct{})
	go func() {
		defer close(purgeDone)
		s.purgeLoop(runCtx)
	}()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	var result error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		result = fmt.Errorf("serve: %w", err)
	}
	stop()
	s.fp.close() // paused requests must not hold the shutdown hostage
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && result == nil {
		result = fmt.Errorf("serve: shutdown: %w", err)
	}
	<-purgeDone
	log.Info("stopped")
	return result
}

// openPool opens a pgx pool with the query mode chosen for this service:
// QueryExecModeCacheStatement. Every statement is prepared once per
// connection and then costs exactly one network round trip with
// server-side parameter binding (never client-side interpolation, unlike
// QueryExecModeSimpleProtocol). The harness puts latency and faults on the
// service→Postgres path, and latency multiplies round trips, so the mode
// with the fewest round trips per statement is the honest baseline; a
// connection cut by a fault only costs a re-prepare on its replacement.
// It is also what pgbench -M prepared does, the benchmark's yardstick.
func openPool(ctx context.Context, dsn string, maxConns int32) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse dsn: %w", err)
	}
	pc.MaxConns = maxConns
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping: %w", err)
	}
	return pool, nil
}

func (s *server) seedAccounts(ctx context.Context) error {
	for _, tenant := range s.cfg.Tokens {
		if _, err := s.pool.Exec(ctx, `INSERT INTO accounts (tenant, balance) VALUES ($1, $2) ON CONFLICT (tenant) DO NOTHING`, tenant, s.cfg.InitialBalance); err != nil {
			return fmt.Errorf("seed account %s: %w", tenant, err)
		}
	}
	return nil
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/orders", s.handle(routeOrders, authTenant, s.createOrder))
	mux.Handle("GET /v1/idempotency/{key}", s.handle("GET /v1/idempotency/{key}", authTenant, s.idempotencyStatus))
	mux.Handle("POST /v1/callbacks/payment", s.handle("POST /v1/callbacks/payment", authProvider, s.paymentCallback))
	mux.Handle("GET /healthz", http.HandlerFunc(s.healthz))
	mux.Handle("GET /metrics", s.metrics.handler())
	// The debug API does not exist at all unless enabled.
	if s.cfg.Failpoints {
		mountFailpoints(mux, s.fp)
		mux.Handle("POST /debug/purge", s.fp.loopbackOnly(http.HandlerFunc(s.debugPurge)))
	}
	return mux
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, "unhealthy", "database unreachable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

type authKind int

const (
	authTenant authKind = iota
	authProvider
)

// reqCtx carries one request's identity and what it ended as, for the
// access log line and the metrics.
type reqCtx struct {
	id      string
	tenant  string
	key     string
	base    *slog.Logger
	log     *slog.Logger // built on first use: most requests log one line
	extra   []any        // attributes added by handlers, on every later line
	status  int
	outcome string
}

// logger returns the request's logger: request id, tenant and idempotency
// key on every line.
func (rc *reqCtx) logger() *slog.Logger {
	if rc.log == nil {
		rc.log = rc.base.With(append([]any{"request_id", rc.id, "tenant", rc.tenant, "idempotency_key", logKey(rc.key)}, rc.extra...)...)
	}
	return rc.log
}

// with adds attributes to every later line of this request.
func (rc *reqCtx) with(args ...any) {
	rc.extra = append(rc.extra, args...)
	rc.log = nil
}

func logKey(k string) string {
	if len(k) > 300 {
		return k[:300]
	}
	return k
}

// Request outcomes (the "outcome" metric label and log field).
const (
	outcomeExecuted = "executed" // the business logic ran (its result may be a stored 402)
	outcomeReplayed = "replayed" // a stored response was returned
	outcomeConflict = "conflict" // 409: the same key is in flight
	outcomeRejected = "rejected" // refused before any effect: 400, 401, 404, 413, 422
	outcomeError    = "error"    // 5xx: a system error, nothing stored
	outcomeRead     = "read"     // GET /v1/idempotency/{key} found a record
)

// handle wraps a handler with request id, authentication, the per-request
// logger (request id, tenant and idempotency key on every line), the
// access log line and the metrics.
func (s *server) handle(route string, auth authKind, h func(http.ResponseWriter, *http.Request, *reqCtx)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.metrics.inFlight.Inc()
		defer s.metrics.inFlight.Dec()
		start := time.Now()
		rc := &reqCtx{id: requestID(r), key: r.Header.Get(headerIdempotencyKey)}
		w.Header().Set(headerRequestID, rc.id)
		ok := false
		switch auth {
		case authTenant:
			rc.tenant, ok = s.tenantFor(r)
		case authProvider:
			ok = s.isProvider(r)
			rc.tenant = "provider"
		}
		rc.base = s.log
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="idemchaos"`)
			rc.writeError(w, http.StatusUnauthorized, outcomeRejected, "unauthorized", "missing or unknown bearer token")
		} else {
			h(w, r, rc)
		}
		elapsed := time.Since(start)
		s.metrics.observe(route, rc.outcome, elapsed)
		if rc.log != nil {
			rc.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rc.status, "outcome", rc.outcome, "duration_ms", float64(elapsed.Microseconds())/1000)
			return
		}
		// The common case, without building a per-request logger.
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("request_id", rc.id), slog.String("tenant", rc.tenant), slog.String("idempotency_key", logKey(rc.key)),
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", rc.status),
			slog.String("outcome", rc.outcome), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000))
	})
}

func requestID(r *http.Request) string {
	if id := r.Header.Get(headerRequestID); id != "" && len(id) <= 64 && visibleASCII(id) {
		return id
	}
	return rand.Text()
}

// tenantFor maps the bearer token to its tenant. Every configured token is
// compared, in constant time over fixed-length hashes, so neither the
// match position nor the token's length leaks through timing.
func (s *server) tenantFor(r *http.Request) (string, bool) {
	tok, ok := bearer(r)
	if !ok {
		return "", false
	}
	h := sha256.Sum256([]byte(tok))
	tenant := ""
	for _, e := range s.tokens {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			tenant = e.tenant
		}
	}
	return tenant, tenant != ""
}

func (s *server) isProvider(r *http.Request) bool {
	tok, ok := bearer(r)
	if !ok {
		return false
	}
	h := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(h[:], s.provider[:]) == 1
}

func bearer(r *http.Request) (string, bool) {
	const prefix = "Bearer "
	a := r.Header.Get("Authorization")
	if len(a) <= len(prefix) || !strings.EqualFold(a[:len(prefix)], prefix) {
		return "", false
	}
	return a[len(prefix):], true
}

// visibleASCII reports whether s is made of visible ASCII only (0x21-0x7E).
func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func (rc *reqCtx) write(w http.ResponseWriter, status int, outcome string, body []byte) {
	rc.status, rc.outcome = status, outcome
	// An explicit length lets a client read the whole body as soon as it
	// is flushed, even while the handler goes on (commit-after-response).
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if len(body) > 0 {
		_, _ = w.Write(body)
	}
}

func (rc *reqCtx) writeJSON(w http.ResponseWriter, status int, outcome string, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(v)
	rc.write(w, status, outcome, b)
}

func (rc *reqCtx) writeError(w http.ResponseWriter, status int, outcome, code, msg string) {
	rc.writeJSON(w, status, outcome, apiError{Error: code, Message: msg})
}

// apiError is the body of every error response.
type apiError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Error: code, Message: msg})
}

// readBody reads at most maxBodyBytes; a larger body is errBodyTooLarge.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBodyBytes {
		return nil, errBodyTooLarge
	}
	if r.ContentLength >= 0 {
		// A declared length within the limit: net/http already ends the
		// body there, so it is read in one allocation of its size
		// (io.ReadAll starts at 512 bytes). A shorter body is an error,
		// as it is to io.ReadAll.
		b := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		return b, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errBodyTooLarge
	}
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".addr-*")
	if err != nil {
		return fmt.Errorf("addr file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("addr file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("addr file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("addr file: %w", err)
	}
	return nil
}
