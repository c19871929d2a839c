package harness

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/reference"
)

// A step waits for a user's service only when something may still run
// there: the scenario's settle always, otherwise one client timeout
// (bounded) after a step with an attempt that timed out, and not at all
// when every attempt was answered.
func TestSettleFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		named, timeout time.Duration
		info           int64
		want           time.Duration
	}{
		{named: 3 * time.Second, want: 3 * time.Second},
		{timeout: 250 * time.Millisecond, info: 1, want: 250 * time.Millisecond},
		{timeout: 10 * time.Millisecond, info: 2, want: minDefaultSettle},
		{timeout: time.Minute, info: 1, want: maxDefaultSettle},
		{info: 1, want: maxDefaultSettle}, // the driver's 2s default
		{timeout: 250 * time.Millisecond, want: 0},
	} {
		if got := settleFor(c.named, c.info, c.timeout); got != c.want {
			t.Errorf("settleFor(%v, info %d, timeout %v) = %v, want %v", c.named, c.info, c.timeout, got, c.want)
		}
	}
}

// Two reads agree when they hold the same effects, in any order.
func TestSameEffects(t *testing.T) {
	t.Parallel()
	a := []history.Effect{{Tenant: "t1", Key: "k1", ID: "order 1"}, {Tenant: "t2", Key: "k2", ID: "order 2"}}
	b := []history.Effect{a[1], a[0]}
	if !sameEffects(a, b) {
		t.Error("the same effects in another order differ")
	}
	if sameEffects(a, append(b, history.Effect{Tenant: "t1", Key: "k1", ID: "order 3"})) {
		t.Error("a late effect went unseen")
	}
	if sameEffects(a, []history.Effect{a[0], {Tenant: "t2", Key: "k2", ID: "order 9"}}) {
		t.Error("another effect of the same count went unseen")
	}
}

// The reference's in-flight gauge is read from its /metrics text; a
// service without it is not waited for.
func TestReferenceInFlight(t *testing.T) {
	t.Parallel()
	var body atomic.Pointer[string]
	with := func(s string) { body.Store(&s) }
	with("# HELP x\n" + reference.InFlightMetric + " 2\nother 1\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, *body.Load())
	}))
	defer srv.Close()
	n, err := referenceInFlight(t.Context(), srv.Client(), srv.URL)
	if err != nil || n != 2 {
		t.Fatalf("in flight %d, %v; want 2", n, err)
	}
	with("other 1\n")
	if _, err := referenceInFlight(t.Context(), srv.Client(), srv.URL); err == nil {
		t.Fatal("a /metrics without the gauge read as a count")
	}
	if referenceQuiesce(t.Context(), srv.Client(), srv.URL) {
		t.Fatal("quiesced on a service without the gauge")
	}
}
