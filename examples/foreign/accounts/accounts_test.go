package accounts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/examples/foreign/accounts"
	"github.com/idemchaos/idemchaos/harness/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// These tests pin each variant's behaviour by hand, on real Postgres,
// without idemchaos.

type reply struct {
	status   int
	location string
	body     string
}

func post(t *testing.T, h http.Handler, account, key, body string) reply {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/accounts/"+account+"/orders", strings.NewReader(body))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return reply{rec.Code, rec.Header().Get("Location"), rec.Body.String()}
}

const order = `{"sku":"A-100","qty":1,"amount":100}`

func start(t *testing.T, o accounts.Options) (http.Handler, string) {
	t.Helper()
	dsn := pgtest.Database(t)
	h, err := accounts.New(t.Context(), dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	return h, dsn
}

func TestAccounts_Correct(t *testing.T) {
	h, _ := start(t, accounts.Options{PaymentLatency: time.Millisecond})
	first := post(t, h, "t1", "k1", order)
	if first.status != http.StatusCreated || first.location != "/accounts/t1/orders/1" {
		t.Fatalf("first: %+v", first)
	}
	if got := post(t, h, "t1", "k1", `{ "amount": 100, "qty": 1, "sku": "A-100" }`); got != first {
		t.Errorf("reordered retry: %+v, want the first answer %+v", got, first)
	}
	for name, c := range map[string]struct {
		account, key, body string
		want               int
	}{
		"qty as a string (validated before the key)": {"t1", "k1", `{"sku":"A-100","qty":"1","amount":100}`, 400},
		"another order": {"t1", "k1", `{"sku":"B-200","qty":1,"amount":100}`, 417},
		"no key":        {"t1", "", order, 428},
		"other account": {"t2", "k1", order, 201},
	} {
		if got := post(t, h, c.account, c.key, c.body); got.status != c.want {
			t.Errorf("%s: %+v, want %d", name, got, c.want)
		}
	}
}

// holdClaim inserts the record of (t1, k1) in an open transaction, as a
// first request still running holds it, and returns the function that
// commits it.
func holdClaim(t *testing.T, dsn string) (commit func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO idempotency_records (account, idem_key, request, path) VALUES ('t1', 'k1', $1::jsonb, '/accounts/t1/orders')`, order); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// waitForLockWait returns once a session of dsn's database waits for a lock:
// the duplicate has reached the claim.
func waitForLockWait(t *testing.T, dsn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatalf("waiting for the duplicate to block on the claim: %v", err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A duplicate of a request still in its transaction: the current claim
// answers 409 once the first commits; the first release's claim leaks the
// primary-key violation as a 500.
func TestAccounts_DuplicateInFlight(t *testing.T) {
	for _, c := range []struct {
		name string
		opts accounts.Options
		want int
	}{
		{"current claim", accounts.Options{}, http.StatusConflict},
		{"select-then-insert", accounts.Options{SelectThenInsert: true}, http.StatusInternalServerError},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, dsn := start(t, c.opts)
			commit := holdClaim(t, dsn)
			got := make(chan reply, 1)
			go func() { got <- post(t, h, "t1", "k1", order) }()
			waitForLockWait(t, dsn)
			commit()
			if r := <-got; r.status != c.want {
				t.Errorf("duplicate: %+v, want %d", r, c.want)
			}
		})
	}
}

func TestAccounts_KeyOnlyIndexRejectsAnotherAccount(t *testing.T) {
	h, _ := start(t, accounts.Options{KeyOnlyIndex: true, PaymentLatency: time.Millisecond})
	post(t, h, "t1", "k1", order)
	if got := post(t, h, "t2", "k1", order); got.status != http.StatusExpectationFailed {
		t.Errorf("other account, same key: %+v, want the (wrong) 417", got)
	}
}
