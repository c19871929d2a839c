package bench

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/internal/refbench"
)

// vegeta's samples count only 201s, stop at their request cap, and fail on
// any other answer, like the driver's and wrk's.
func TestRunVegeta_CountsCapsAndFails(t *testing.T) {
	t.Parallel()
	addr, stop, err := refbench.StartHTTPFloor()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	rate, n, err := runVegeta(addr, 4, 200*time.Millisecond, 1_000_000)
	if err != nil || rate <= 0 || n == 0 {
		t.Fatalf("runVegeta on the floor = %v, %d, %v; want a positive rate and count", rate, n, err)
	}
	// A cap reached before the deadline makes the sample invalid, since it
	// would no longer be a rate over the whole slice.
	if _, _, err := runVegeta(addr, 4, time.Minute, 50); err == nil || !strings.Contains(err.Error(), "request cap") {
		t.Fatalf("runVegeta with a 50-request cap = %v, want the cap error", err)
	}

	var hits atomic.Int64
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-t1" || r.Header.Get("Idempotency-Key") == "" || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if hits.Add(1)%10 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer bad.Close() // httptest listens on 127.0.0.1
	_, _, err = runVegeta(bad.Listener.Addr().String(), 2, 200*time.Millisecond, 1_000_000)
	if err == nil || !strings.Contains(err.Error(), "status 500") {
		t.Fatalf("runVegeta against a handler that fails every tenth request = %v, want a failure naming status 500", err)
	}
	if hits.Load() < 10 {
		t.Fatalf("only %d well-formed requests reached the handler", hits.Load())
	}
}
