package fleet_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemchaos/idemchaos/examples/foreign/fleet"
)

// These tests pin each variant's behaviour by hand, without idemchaos: a
// charge is running on the slow first instance (its client gave up) when
// the retry reaches the second instance.

type reply struct {
	status int
	body   string
}

func post(h http.Handler, key string) reply {
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"sku":"A-100","qty":1,"amount":100}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Tenant", "t1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return reply{rec.Code, rec.Body.String()}
}

type listing struct {
	Orders []struct {
		ID       string `json:"order_id"`
		Instance int    `json:"instance"`
	} `json:"orders"`
	Charging int `json:"charging"`
}

// list reads the listing; it goes to the next instance like any request.
func list(t *testing.T, h http.Handler) listing {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/orders", nil))
	var l listing
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// retryWhileCharging sends k1 and, while its charge is held running,
// retries it until the retry is answered otherwise than 409 (another
// instance's answer), or once when once is set; then lets the charge end.
// It returns the retry's answer and the first's.
func retryWhileCharging(h http.Handler, charging <-chan int, release chan<- struct{}, once bool) (retry, first reply) {
	done := make(chan reply)
	go func() { done <- post(h, "k1") }()
	<-charging
	// A retry on the charging instance finds its claim (409); the
	// balancer gives the next one to the other instance.
	for {
		retry = post(h, "k1")
		if once || retry.status != http.StatusConflict {
			break
		}
	}
	close(release)
	return retry, <-done
}

// gateway holds the first charge until released; later ones pass.
func gateway() (charge func(int), charging chan int, release chan struct{}) {
	charging, release = make(chan int, 1), make(chan struct{})
	var first atomic.Bool
	return func(instance int) {
		if first.CompareAndSwap(false, true) {
			charging <- instance
			<-release
		}
	}, charging, release
}

func TestFleet_Correct(t *testing.T) {
	charge, charging, release := gateway()
	h := fleet.New(fleet.Options{Charge: charge})
	retry, first := retryWhileCharging(h, charging, release, true)
	if retry.status != http.StatusConflict {
		t.Fatalf("a retry while the first charges: %+v, want 409", retry)
	}
	if first.status != http.StatusCreated {
		t.Fatalf("first: %+v", first)
	}
	if again := post(h, "k1"); again.status != http.StatusCreated || again.body != first.body {
		t.Fatalf("a retry after the charge: %+v, want the first answer %+v", again, first)
	}
	if n := len(list(t, h).Orders); n != 1 {
		t.Fatalf("%d orders, want 1", n)
	}
}

func TestFleet_LocalClaims(t *testing.T) {
	charge, charging, release := gateway()
	h := fleet.New(fleet.Options{Charge: charge, LocalClaims: true})
	retry, first := retryWhileCharging(h, charging, release, false)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %+v", first)
	}
	if retry.status != http.StatusCreated || retry.body == first.body {
		t.Fatalf("retry on the other instance: %+v (first %+v), want a second 201", retry, first)
	}
	l := list(t, h)
	if len(l.Orders) != 2 || l.Orders[0].Instance == l.Orders[1].Instance {
		t.Fatalf("orders %+v, want one from each instance", l.Orders)
	}
}
