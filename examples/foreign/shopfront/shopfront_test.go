package shopfront_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idemchaos/idemchaos/examples/foreign/shopfront"
)

// These tests pin each variant's behaviour by hand, without idemchaos.

type reply struct {
	status int
	body   string
}

func post(t *testing.T, h http.Handler, account, key, body string) reply {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/orders", strings.NewReader(body))
	req.Header.Set("X-Account", account)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return reply{rec.Code, rec.Body.String()}
}

func effects(t *testing.T, h http.Handler) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/effects", nil))
	var list []map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	return len(list)
}

const order = `{"sku":"A-100","qty":1,"amount":100}`

func TestShopfront_Correct(t *testing.T) {
	h := shopfront.New(shopfront.Options{})
	first := post(t, h, "t1", "k1", order)
	if first.status != http.StatusOK {
		t.Fatalf("first: %+v", first)
	}
	if got := post(t, h, "t1", "k1", `{ "amount": 100, "qty": 1, "sku": "A-100" }`); got != first {
		t.Errorf("reordered retry: %+v, want the first answer", got)
	}
	for _, body := range []string{`{"sku":"A-100","qty":"1","amount":100}`, `{"sku":"A-100","qty":true,"amount":100}`, `{"sku":"B-200","qty":1,"amount":100}`} {
		if got := post(t, h, "t1", "k1", body); got.status != http.StatusBadRequest || !strings.Contains(got.body, "idempotency_error") {
			t.Errorf("reuse with %s: %+v, want 400 idempotency_error", body, got)
		}
	}
	if got := post(t, h, "t2", "k1", order); got.status != http.StatusOK || got.body == first.body {
		t.Errorf("other account, same key: %+v, want its own order", got)
	}
	if n := effects(t, h); n != 2 {
		t.Errorf("%d orders, want 2", n)
	}
}

// Copies sent at once all get the first one's answer: one order.
func TestShopfront_InFlightDuplicatesWaitAndReplay(t *testing.T) {
	h := shopfront.New(shopfront.Options{})
	var wg sync.WaitGroup
	got := make([]reply, 4)
	for i := range got {
		wg.Go(func() { got[i] = post(t, h, "t1", "k1", order) })
	}
	wg.Wait()
	for _, r := range got {
		if r != got[0] || r.status != http.StatusOK {
			t.Errorf("answers %+v: want four identical 200s", got)
			break
		}
	}
	if n := effects(t, h); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
}

func TestShopfront_Flaws(t *testing.T) {
	t.Run("fingerprint-parsed: a type-only change replays", func(t *testing.T) {
		h := shopfront.New(shopfront.Options{FingerprintParsed: true})
		first := post(t, h, "t1", "k1", order)
		if got := post(t, h, "t1", "k1", `{"sku":"A-100","qty":"1","amount":100}`); got != first {
			t.Errorf(`"qty":"1" after "qty":1: %+v, want the (wrong) replay %+v`, got, first)
		}
		if got := post(t, h, "t1", "k1", `{"sku":"A-100","qty":true,"amount":100}`); got != first {
			t.Errorf(`"qty":true after "qty":1: %+v, want the (wrong) replay`, got)
		}
	})
	t.Run("replay-by-rerun: a retry places a second order", func(t *testing.T) {
		h := shopfront.New(shopfront.Options{ReplayByRerun: true})
		first := post(t, h, "t1", "k1", order)
		if got := post(t, h, "t1", "k1", order); got.status != http.StatusOK || got.body == first.body {
			t.Errorf("retry: %+v, want a rebuilt body", got)
		}
		if n := effects(t, h); n != 2 {
			t.Errorf("%d orders, want 2", n)
		}
	})
}
