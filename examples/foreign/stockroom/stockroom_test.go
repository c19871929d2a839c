package stockroom_test

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/idemchaos/idemchaos/examples/foreign/stockroom"
	"github.com/idemchaos/idemchaos/harness/mariadbtest"
)

// These tests pin each variant's behaviour by hand, without idemchaos, on
// a real MariaDB server.

func TestMain(m *testing.M) { mariadbtest.Main(m) }

type reply struct {
	status         int
	location, body string
	replayed       bool
}

func serve(t *testing.T, o stockroom.Options) (string, *sql.DB) {
	t.Helper()
	db := mariadbtest.Database(t)
	h, closeDB, err := stockroom.New(t.Context(), db.DSN, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); closeDB() })
	conn, err := sql.Open("mysql", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return srv.URL, conn
}

func post(t *testing.T, base, token, key, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v2/orders", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header.Get("Location"), string(b), resp.Header.Get("Idempotent-Replayed") == "true"}
}

func ordersOf(t *testing.T, db *sql.DB, merchant, key string) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM orders WHERE merchant = ? AND idem_key = ?", merchant, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

const order = `{"sku":"A-100","qty":1,"amount":100}`

func together(t *testing.T, base, key string, n int) []reply {
	var wg sync.WaitGroup
	out := make([]reply, n)
	for i := range out {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = post(t, base, "sk_live_m1", key, order) }()
	}
	wg.Wait()
	return out
}

func TestStockroom_Correct(t *testing.T) {
	base, db := serve(t, stockroom.Options{})
	first := post(t, base, "sk_live_m1", "k1", order)
	if first.status != http.StatusCreated || first.location == "" || first.replayed {
		t.Fatalf("first: %+v", first)
	}
	if got := post(t, base, "sk_live_m1", "k1", order); got.status != first.status || got.body != first.body || got.location != first.location || !got.replayed {
		t.Errorf("retry: %+v, want %+v replayed", got, first)
	}
	if got := post(t, base, "sk_live_m1", "k1", `{"sku":"B-200","qty":1,"amount":100}`); got.status != http.StatusUnprocessableEntity {
		t.Errorf("reuse: %+v, want 422", got)
	}
	if got := post(t, base, "sk_live_m1", "", order); got.status != http.StatusBadRequest {
		t.Errorf("no key: %+v, want 400", got)
	}
	if got := post(t, base, "sk_live_m2", "k1", order); got.status != http.StatusCreated || got.body == first.body {
		t.Errorf("m2's k1: %+v, want its own order", got)
	}
	for i := range 5 {
		key := fmt.Sprintf("burst-%d", i)
		answers := together(t, base, key, 6)
		for _, a := range answers[1:] {
			if a.status != answers[0].status || a.body != answers[0].body {
				t.Errorf("%s: copies answered %+v and %+v", key, answers[0], a)
			}
		}
		if n := ordersOf(t, db, "m1", key); n != 1 {
			t.Errorf("%s: %d orders, want 1", key, n)
		}
	}
	if n := ordersOf(t, db, "m1", "k1"); n != 1 {
		t.Errorf("k1: %d orders, want 1", n)
	}
}

// The first release's upsert: MariaDB reports 2 affected rows for the
// updated duplicate, which the claim reads as "new", so a plain retry
// places a second order.
func TestStockroom_UpsertClaimReexecutes(t *testing.T) {
	base, db := serve(t, stockroom.Options{UpsertClaim: true})
	first := post(t, base, "sk_live_m1", "k1", order)
	again := post(t, base, "sk_live_m1", "k1", order)
	if first.status != http.StatusCreated || again.status != http.StatusCreated || again.replayed || again.body == first.body {
		t.Fatalf("retry was replayed: %+v, %+v", first, again)
	}
	if n := ordersOf(t, db, "m1", "k1"); n != 2 {
		t.Fatalf("k1: %d orders after a retry, want 2", n)
	}
	together(t, base, "burst", 4)
	if n := ordersOf(t, db, "m1", "burst"); n != 4 {
		t.Errorf("burst of 4: %d orders, want 4 (each copy waits on the row, then updates it)", n)
	}
}
