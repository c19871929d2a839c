package ordersvc_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/examples/ordersvc"
	"github.com/idemchaos/idemchaos/harness/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type reply struct {
	status     int
	body       string
	retryAfter string
}

func post(t *testing.T, h http.Handler, token, key, body string) reply {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return reply{rec.Code, string(b), rec.Header().Get("Retry-After")}
}

func TestCreateOrder_Correct(t *testing.T) {
	dsn := pgtest.Database(t)
	h, err := ordersvc.New(t.Context(), dsn, ordersvc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := post(t, h, "tok-t1", "k1", `{"sku":"A-100","qty":1}`)
	if first.status != http.StatusCreated || !strings.Contains(first.body, `"order":{"sku":"A-100","qty":1}`) {
		t.Fatalf("first: %+v", first)
	}
	for name, c := range map[string]struct {
		token, key, body string
		want             reply
	}{
		"retry replays the same bytes": {"tok-t1", "k1", `{"sku":"A-100","qty":1}`, first},
		"reuse with another body":      {"tok-t1", "k1", `{"sku":"B-200","qty":1}`, reply{status: 422}},
		"same key, other tenant":       {"tok-t2", "k1", `{"sku":"A-100","qty":1}`, reply{status: 201}},
		"no key":                       {"tok-t1", "", `{}`, reply{status: 400}},
		"no token":                     {"", "k9", `{}`, reply{status: 401}},
		"not JSON":                     {"tok-t1", "k9", `{`, reply{status: 400}},
	} {
		t.Run(name, func(t *testing.T) {
			got := post(t, h, c.token, c.key, c.body)
			if got.status != c.want.status || (c.want.body != "" && got.body != c.want.body) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// A duplicate that arrives while the first request's transaction is still
// open waits briefly, then gets 409 and Retry-After; once the first is gone
// the key is free again.
func TestCreateOrder_InFlightDuplicateGets409(t *testing.T) {
	dsn := pgtest.Database(t)
	h, err := ordersvc.New(t.Context(), dsn, ordersvc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// What the first request holds while it runs: its uncommitted claim.
	if _, err := tx.Exec(ctx, `INSERT INTO idempotency_keys VALUES ('t1', 'k1', '', 0, '')`); err != nil {
		t.Fatal(err)
	}
	if got := post(t, h, "tok-t1", "k1", `{}`); got.status != http.StatusConflict || got.retryAfter != "1" {
		t.Errorf("duplicate in flight: %+v, want 409 with Retry-After: 1", got)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := post(t, h, "tok-t1", "k1", `{}`); got.status != http.StatusCreated {
		t.Errorf("after the first gave up: %+v, want 201", got)
	}
}
