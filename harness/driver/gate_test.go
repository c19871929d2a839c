package driver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
)

// A click sent together is complete at the service only once every copy is
// there: a copy held up in the driver (here by its route; on a loaded
// machine by the scheduler or a timer) holds the others back, so the
// service cannot finish the original before the copies arrive — the race
// the click is sent to provoke happens whatever the timing.
func TestRun_TogetherHoldsCopiesUntilAllAreWritten(t *testing.T) {
	t.Parallel()
	headers := make(chan struct{}, 3)
	bodies := make(chan struct{}, 3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers <- struct{}{} // net/http calls the handler once the header is in
		_, _ = io.ReadAll(r.Body)
		bodies <- struct{}{}
		w.WriteHeader(201)
	}))
	defer srv.Close()
	release := make(chan struct{})
	router := routeFunc(func(ctx context.Context, a driver.AttemptInfo) (driver.Route, error) {
		if a.Click == 2 {
			<-release // the third copy is late
		}
		return driver.Route{}, nil
	})
	in := intents(1, "t1")
	in[0].Clicks, in[0].Together = 3, true
	type ran struct{ h *history.History }
	done := make(chan ran, 1)
	go func() {
		h, _ := run(t, driver.Config{BaseURL: srv.URL, Router: router}, in)
		done <- ran{h}
	}()
	for range 2 {
		<-headers
	}
	// Two copies are at the service and the third is not written. No
	// signal says "nothing happened": watch for a body for a while. Sent
	// without the gate, the two bodies come within microseconds.
	select {
	case <-bodies:
		close(release)
		t.Fatal("a copy's request was complete at the service while the third copy was still unwritten")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	r := <-done
	if len(r.h.Attempts) != 3 {
		t.Fatalf("got %d attempts, want 3", len(r.h.Attempts))
	}
	var lastInvoke, firstEnd int64 = 0, 1 << 62
	for _, a := range r.h.Attempts {
		if a.Status != 201 {
			t.Fatalf("copy %d: %d %s", a.Op, a.Status, a.Error)
		}
		lastInvoke, firstEnd = max(lastInvoke, a.Invoke), min(firstEnd, a.Complete)
	}
	if lastInvoke >= firstEnd {
		t.Fatalf("the history does not show the copies overlapping: last invoke %d, first answer %d", lastInvoke, firstEnd)
	}
}

// A copy that is never sent (its route failed) does not hold the others
// back forever.
func TestRun_TogetherReleasesWhenACopyIsNotSent(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(201)
	}))
	defer srv.Close()
	router := routeFunc(func(_ context.Context, a driver.AttemptInfo) (driver.Route, error) {
		if a.Click == 1 {
			return driver.Route{}, errors.New("no path")
		}
		return driver.Route{}, nil
	})
	in := intents(1, "t1")
	in[0].Clicks, in[0].Together = 3, true
	h, _ := run(t, driver.Config{BaseURL: srv.URL, Router: router}, in)
	got := map[history.Outcome]int{}
	for _, a := range h.Attempts {
		got[a.Outcome]++
	}
	if got[history.OK] != 2 || got[history.Fail] != 1 {
		t.Fatalf("outcomes %v, want 2 ok and 1 fail (not sent)", got)
	}
}
