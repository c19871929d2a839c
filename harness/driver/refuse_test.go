package driver_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/idemchaos/idemchaos/harness/driver"
)

// A service that refuses every repeat answers its in-flight copies with
// the same status as a reuse: with RefuseStatus that status is final and
// never retried, even when it is also the in-flight status; without, the
// client retries it for the whole budget.
func TestRun_RefusalIsNotRetried(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusPreconditionFailed)
	}))
	defer srv.Close()
	for _, c := range []struct {
		refuse int
		want   int64
	}{{http.StatusPreconditionFailed, 1}, {0, 3}} {
		hits.Store(0)
		cfg := driver.Config{BaseURL: srv.URL, InFlightStatus: http.StatusPreconditionFailed, RefuseStatus: c.refuse,
			Retry: driver.RetryPolicy{MaxAttempts: 3, Base: 1, Max: 1}}
		run(t, cfg, intents(1, "t1"))
		if got := hits.Load(); got != c.want {
			t.Errorf("RefuseStatus %d: %d attempts, want %d", c.refuse, got, c.want)
		}
	}
}
