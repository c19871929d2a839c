package harness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/internal/sut"
)

// neverDies is a process that stays up: the arming's answer was lost and
// the process did not die.
type neverDies struct{ faults.Process }

func (neverDies) Exited() <-chan struct{} { return make(chan struct{}) }

// An arming whose answer was lost waits for the process to die, but a
// cancelled context cuts the wait short (it was an uninterruptible
// time.After).
func TestWorld_CrashArmingWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	w := &world{t: &sut.Target{DebugURLs: map[string]string{"service": srv.URL}},
		procs: map[string]faults.Process{"service": neverDies{}}, deadGrace: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Failpoint(ctx, "service", "after-claim", "crash", 1) }()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a failed arming of a live process returned no error")
		}
	case <-time.After(30 * time.Second): // the hour-long grace is what it must not wait for
		t.Fatal("Failpoint kept waiting after its context was cancelled")
	}
}
