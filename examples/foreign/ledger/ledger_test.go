package ledger_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/examples/foreign/ledger"
)

// These tests pin each variant's behaviour by hand, without idemchaos: the
// corpus's verdicts mean something only if the correct ledger really is
// correct and each flawed one really has its flaw.

type reply struct {
	status   int
	location string
	body     string
}

func post(t *testing.T, h http.Handler, key, body string) reply {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return reply{rec.Code, rec.Header().Get("Location"), rec.Body.String()}
}

const order = `{"tenant":"t1","sku":"A-100","qty":1,"amount":100}`

func TestLedger_Correct(t *testing.T) {
	h := ledger.New(ledger.Options{})
	first := post(t, h, "k1", order)
	if first.status != http.StatusCreated || first.location != "/orders/L-1" {
		t.Fatalf("first: %+v", first)
	}
	for name, c := range map[string]struct {
		key, body string
		want      int
	}{
		"reuse with another body": {"k1", `{"tenant":"t1","sku":"B-200","qty":1,"amount":100}`, 422},
		"same bytes reordered":    {"k1", `{"qty":1,"tenant":"t1","sku":"A-100","amount":100}`, 422},
		"other tenant, same key":  {"k1", `{"tenant":"t2","sku":"A-100","qty":1,"amount":100}`, 201},
		"no key":                  {"", order, 400},
		"no tenant":               {"k9", `{"sku":"A-100","qty":1}`, 400},
	} {
		if got := post(t, h, c.key, c.body); got.status != c.want {
			t.Errorf("%s: %+v, want %d", name, got, c.want)
		}
	}
	if retry := post(t, h, "k1", order); retry != first {
		t.Errorf("retry: %+v, want the first answer %+v", retry, first)
	}
}

func TestLedger_GatewayFailureReleasesTheKey(t *testing.T) {
	h := ledger.New(ledger.Options{FailEvery: 2})
	post(t, h, "k0", order) // charge 1 succeeds
	if got := post(t, h, "k1", order); got.status != http.StatusServiceUnavailable {
		t.Fatalf("charge 2: %+v, want 503", got)
	}
	if got := post(t, h, "k1", order); got.status != http.StatusCreated {
		t.Errorf("retry after the gateway failure: %+v, want 201", got)
	}
}

// Each flawed variant, and the symptom it must show.
func TestLedger_Flaws(t *testing.T) {
	t.Run("fingerprint-command: an identical retry is 'another request'", func(t *testing.T) {
		h := ledger.New(ledger.Options{FingerprintCommand: true})
		post(t, h, "k1", order)
		if got := post(t, h, "k1", order); got.status != http.StatusUnprocessableEntity {
			t.Errorf("retry: %+v, want 422", got)
		}
	})
	t.Run("complete-on-200-only: 409 forever after a 201", func(t *testing.T) {
		h := ledger.New(ledger.Options{CompleteOn200Only: true})
		if got := post(t, h, "k1", order); got.status != http.StatusCreated {
			t.Fatalf("first: %+v", got)
		}
		for range 3 {
			if got := post(t, h, "k1", order); got.status != http.StatusConflict {
				t.Errorf("retry: %+v, want 409", got)
			}
		}
	})
	t.Run("replay-body-only: the replay has no Location", func(t *testing.T) {
		h := ledger.New(ledger.Options{ReplayBodyOnly: true})
		first := post(t, h, "k1", order)
		got := post(t, h, "k1", order)
		if first.location == "" || got.location != "" || got.body != first.body {
			t.Errorf("first %+v, replay %+v: want the same body without Location", first, got)
		}
	})
	t.Run("short retention: a late retry places a second order", func(t *testing.T) {
		h := ledger.New(ledger.Options{Retention: 20 * time.Millisecond})
		first := post(t, h, "k1", order)
		time.Sleep(40 * time.Millisecond) // past the retention, which is the point
		if got := post(t, h, "k1", order); got.status != http.StatusCreated || got.body == first.body {
			t.Errorf("late retry: %+v, want a new order", got)
		}
	})
	t.Run("cache-errors: the 503 is replayed although the gateway is back", func(t *testing.T) {
		h := ledger.New(ledger.Options{FailEvery: 2, CacheErrors: true})
		post(t, h, "k0", order)
		post(t, h, "k1", order)
		if got := post(t, h, "k1", order); got.status != http.StatusServiceUnavailable {
			t.Errorf("retry: %+v, want the cached 503", got)
		}
	})
}
