package reference_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/reference"
)

// svc is a reference service running in-process for one test.
type svc struct {
	url  string
	dsn  string
	logs *syncBuffer
}

// startService runs Serve on a fresh database (unless cfg.DSN is set) with
// failpoints on and returns once it listens. It stops with the test.
func startService(t *testing.T, cfg reference.Config) *svc {
	t.Helper()
	cfg.Failpoints = true
	return startServiceAsIs(t, cfg)
}

// startServiceAsIs is startService without forcing failpoints on.
func startServiceAsIs(t *testing.T, cfg reference.Config) *svc {
	t.Helper()
	if cfg.DSN == "" {
		cfg.DSN = pgtest.Database(t)
	}
	cfg.Addr = "127.0.0.1:0"
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 4
	}
	ready := make(chan string, 1)
	cfg.Ready = func(addr string) { ready <- addr }
	s := &svc{dsn: cfg.DSN, logs: &syncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reference.Serve(ctx, cfg, s.logs) }()
	select {
	case addr := <-ready:
		s.url = "http://" + addr
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
		if t.Failed() {
			t.Logf("service logs:\n%s", tail(s.logs.String(), 40))
		}
	})
	return s
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// reply is a received response.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) replayed() bool { return r.header.Get("Idempotent-Replayed") == "true" }

func (r reply) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// order is a POST /v1/orders to send.
type order struct {
	token string // default tok-t1
	key   string // "" sends no header
	body  string // default a fixed order
}

const defaultBody = `{"sku":"A-100","qty":2,"amount":500}`

func (s *svc) post(t *testing.T, o order) reply {
	t.Helper()
	r, err := s.tryPost(o)
	if err != nil {
		t.Fatalf("POST /v1/orders: %v", err)
	}
	return r
}

func (s *svc) tryPost(o order) (reply, error) { return s.tryPostIntent(o, "") }

// tryPostIntent sends o with an X-Intent-ID header (when intent is set).
func (s *svc) tryPostIntent(o order, intent string) (reply, error) {
	if o.token == "" {
		o.token = "tok-t1"
	}
	if o.body == "" {
		o.body = defaultBody
	}
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/orders", strings.NewReader(o.body))
	req.Header.Set("Authorization", "Bearer "+o.token)
	req.Header.Set("Content-Type", "application/json")
	if o.key != "" {
		req.Header.Set("Idempotency-Key", o.key)
	}
	if intent != "" {
		req.Header.Set("X-Intent-ID", intent)
	}
	return do(req)
}

// client opens a connection per request: a handler may answer (flush) and
// then stay paused at a failpoint, and a kept-alive connection would queue
// the next request behind it.
// ExpectContinueTimeout lets a request with "Expect: 100-continue" wait for
// the server's verdict before sending its body (the 413 test).
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, ExpectContinueTimeout: 10 * time.Second}}

func do(req *http.Request) (reply, error) {
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, err
}

func (s *svc) get(t *testing.T, path, token string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	r, err := do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return r
}

// postAsync sends o in the background; the reply arrives on the channel.
func (s *svc) postAsync(t *testing.T, o order) <-chan reply {
	t.Helper()
	ch := make(chan reply, 1)
	go func() {
		r, err := s.tryPost(o)
		if err != nil {
			r = reply{status: -1, body: []byte(err.Error())}
		}
		ch <- r
	}()
	return ch
}

// failpoint arms name with action ("pause", "crash", "off"); count > 0
// limits how many hits trigger.
func failpoint(t *testing.T, base, name, action string, count int) {
	t.Helper()
	body := fmt.Sprintf(`{"action":%q,"count":%d}`, action, count)
	req, _ := http.NewRequest(http.MethodPost, base+"/debug/failpoints/"+name, strings.NewReader(body))
	r, err := do(req)
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("arm failpoint %s: %v %v", name, err, r)
	}
}

// release disarms name and lets its paused hits go on.
func release(t *testing.T, base, name string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+"/debug/failpoints/"+name, nil)
	if r, err := do(req); err != nil || r.status != http.StatusOK {
		t.Fatalf("release failpoint %s: %v %v", name, err, r)
	}
}

// awaitFailpoint long-polls until name has ≥hits hits and ≥waiting paused hits.
func awaitFailpoint(t *testing.T, base, name string, hits, waiting int) {
	t.Helper()
	r, err := do(mustRequest(http.MethodGet, fmt.Sprintf("%s/debug/failpoints/%s?hits=%d&waiting=%d&timeout=30s", base, name, hits, waiting)))
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("await failpoint %s (hits %d, waiting %d): %v %v", name, hits, waiting, err, r)
	}
}

func mustRequest(method, url string) *http.Request {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		panic(err)
	}
	return req
}

// exec runs one SQL statement against dsn.
func execSQL(t testing.TB, dsn, sql string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag.RowsAffected()
}

// queryInt runs a one-value query.
func queryInt(t testing.TB, dsn, sql string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// effects counts the effects of one kind per (tenant, key).
func effects(t *testing.T, dsn, kind, tenant, key string) int {
	t.Helper()
	all, err := reference.ReadEffects(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range all {
		if e.Kind == kind && e.Tenant == tenant && e.Key == key {
			n++
		}
	}
	return n
}

// ageRecords moves every key record's clock back by d, as if d had passed
// (leases expire, records grow old), without waiting.
func ageRecords(t *testing.T, dsn string, d time.Duration) {
	t.Helper()
	execSQL(t, dsn, `UPDATE idempotency_keys SET created_at = created_at - $1::float8 * interval '1 second',
		updated_at = updated_at - $1::float8 * interval '1 second',
		lease_expires_at = lease_expires_at - $1::float8 * interval '1 second'`, d.Seconds())
}

func jsonField(t *testing.T, body []byte, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	return fmt.Sprint(m[field])
}

// postSigned is postJSON with the provider's signature header, as the
// reference's callback endpoint wants it (sig "" sends none).
func postSigned(t *testing.T, url, token, sig, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if sig != "" {
		req.Header.Set(reference.SignatureHeader, sig)
	}
	r, err := do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return r
}

// signed is body's signature under the default provider secret, now.
func signed(body string) string {
	return reference.SignCallback([]byte(reference.DefaultProviderSecret), []byte(body), time.Now())
}

func postJSON(t *testing.T, url, token, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	r, err := do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return r
}
