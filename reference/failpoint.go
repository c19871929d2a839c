package reference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Failpoint names: the places in the code path where the harness can place
// a crash or a pause. Each is hit by both the correct service and every
// mutant, at the same logical place.
const (
	// fpBeforeClaim: key validated and fingerprinted, nothing written yet
	// (the check-then-insert and execute-then-record mutants have already
	// done their SELECT here).
	fpBeforeClaim = "before-claim"
	// fpAfterClaim: the key record is 'processing' (committed), the
	// business transaction has not begun.
	fpAfterClaim = "after-claim"
	// fpAfterBusinessWrite: order, ledger debit and outbox event are
	// written inside the open transaction, not yet committed.
	fpAfterBusinessWrite = "after-business-write-before-commit"
	// fpAfterCommit: committed, response not yet written (a crash here is a
	// lost response: the retry must replay).
	fpAfterCommit = "after-commit-before-response"
	// fpAfterResponse: the response has been written and flushed. In the
	// correct service the commit happened before; in commit-after-response
	// it has not.
	fpAfterResponse = "after-response-before-commit"
	// fpCallbackAfterDedupe: a payment callback's provider transaction is
	// recorded, the credit not yet applied (same transaction).
	fpCallbackAfterDedupe = "callback-after-dedupe"
	// fpConsumerAfterClaim: the consumer holds a claimed event, no effect yet.
	fpConsumerAfterClaim = "consumer-after-claim"
	// fpConsumerAfterEffect: the notification is committed, the event not
	// yet acknowledged (a crash here means redelivery).
	fpConsumerAfterEffect = "consumer-after-effect-before-ack"
)

var failpointNames = []string{
	fpBeforeClaim, fpAfterClaim, fpAfterBusinessWrite, fpAfterCommit, fpAfterResponse,
	fpCallbackAfterDedupe, fpConsumerAfterClaim, fpConsumerAfterEffect,
}

// Failpoint actions.
const (
	fpOff   = "off"
	fpPause = "pause"
	fpCrash = "crash"
)

// failpoints is the registry of named crash/pause points. When disabled,
// hit is a single branch. When enabled, every hit is counted (armed or not)
// so a test can wait for "the second request has claimed" without sleeping.
type failpoints struct {
	enabled bool
	crash   func(name string)
	// allow are networks trusted like loopback (a container's private
	// network, which the harness reaches it from).
	allow []netip.Prefix

	mu      sync.Mutex
	points  map[string]*failpoint
	changed chan struct{} // closed and replaced on every state change
	closed  chan struct{}
	once    sync.Once
}

type failpoint struct {
	action    string
	remaining int // triggers left; 0 means unlimited
	hits      int
	waiting   int
	release   chan struct{}
}

// failpointState is the JSON view of one failpoint.
type failpointState struct {
	Name    string `json:"name"`
	Action  string `json:"action"`
	Count   int    `json:"count"`
	Hits    int    `json:"hits"`
	Waiting int    `json:"waiting"`
}

func newFailpoints(enabled bool, crash func(name string)) *failpoints {
	f := &failpoints{
		enabled: enabled,
		crash:   crash,
		points:  make(map[string]*failpoint, len(failpointNames)),
		changed: make(chan struct{}),
		closed:  make(chan struct{}),
	}
	for _, n := range failpointNames {
		f.points[n] = &failpoint{action: fpOff, release: make(chan struct{})}
	}
	return f
}

// selfKill is the crash action: a real SIGKILL to this process, so nothing
// (deferred functions, open transactions, buffered writes) gets a chance to
// finish. It never returns.
func selfKill(string) {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// broadcastLocked wakes every waiter of wait. Callers hold f.mu.
func (f *failpoints) broadcastLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// close releases every paused hit for good (shutdown).
func (f *failpoints) close() { f.once.Do(func() { close(f.closed) }) }

// hit passes the named point. It returns at once unless the point is armed:
// crash kills the process, pause blocks until released, ctx is done or the
// registry is closed (then it returns the reason as an error).
func (f *failpoints) hit(ctx context.Context, name string) error {
	if !f.enabled {
		return nil
	}
	f.mu.Lock()
	fp := f.points[name]
	fp.hits++
	action := fp.action
	if action != fpOff && fp.remaining > 0 {
		fp.remaining--
		if fp.remaining == 0 {
			fp.action = fpOff
		}
	}
	switch action {
	case fpCrash:
		f.mu.Unlock()
		f.crash(name)
		return nil
	case fpPause:
		fp.waiting++
		rel := fp.release
		f.broadcastLocked()
		f.mu.Unlock()
		var err error
		select {
		case <-rel:
		case <-f.closed:
			err = fmt.Errorf("failpoint %s: registry closed", name)
		case <-ctx.Done():
			err = fmt.Errorf("failpoint %s: %w", name, ctx.Err())
		}
		f.mu.Lock()
		fp.waiting--
		f.broadcastLocked()
		f.mu.Unlock()
		return err
	default:
		f.broadcastLocked()
		f.mu.Unlock()
		return nil
	}
}

// set arms (or disarms) a point. count > 0 limits how many hits trigger.
// Setting any action releases hits paused under the previous one.
func (f *failpoints) set(name, action string, count int) error {
	switch action {
	case fpOff, fpPause, fpCrash:
	default:
		return fmt.Errorf("failpoint action %q: want off, pause or crash", action)
	}
	if count < 0 {
		return fmt.Errorf("failpoint count %d is negative", count)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fp, ok := f.points[name]
	if !ok {
		return fmt.Errorf("failpoint %q: %w", name, errUnknownFailpoint)
	}
	close(fp.release)
	fp.release = make(chan struct{})
	fp.action, fp.remaining = action, count
	f.broadcastLocked()
	return nil
}

// releaseWaiters lets the currently paused hits go on; the point stays armed.
func (f *failpoints) releaseWaiters(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp, ok := f.points[name]
	if !ok {
		return fmt.Errorf("failpoint %q: %w", name, errUnknownFailpoint)
	}
	close(fp.release)
	fp.release = make(chan struct{})
	f.broadcastLocked()
	return nil
}

func (f *failpoints) state(name string) (failpointState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stateLocked(name)
}

func (f *failpoints) stateLocked(name string) (failpointState, bool) {
	fp, ok := f.points[name]
	if !ok {
		return failpointState{}, false
	}
	return failpointState{Name: name, Action: fp.action, Count: fp.remaining, Hits: fp.hits, Waiting: fp.waiting}, true
}

// wait blocks until the point has at least minHits hits and minWaiting
// paused hits, or ctx is done.
func (f *failpoints) wait(ctx context.Context, name string, minHits, minWaiting int) (failpointState, error) {
	for {
		f.mu.Lock()
		st, ok := f.stateLocked(name)
		ch := f.changed
		f.mu.Unlock()
		if !ok {
			return st, fmt.Errorf("failpoint %q: %w", name, errUnknownFailpoint)
		}
		if st.Hits >= minHits && st.Waiting >= minWaiting {
			return st, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, fmt.Errorf("failpoint %s: wait: %w", name, ctx.Err())
		}
	}
}

// loopbackOnly refuses every client that is not on a loopback address
// (or in one of the allowed networks).
func (f *failpoints) loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		ip := net.ParseIP(host)
		if err != nil || ip == nil || (!ip.IsLoopback() && !f.allowed(host)) {
			writeError(w, http.StatusForbidden, "forbidden", "debug endpoints answer loopback clients only")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// mountFailpoints registers the /debug/failpoints API on mux:
//
//	GET    /debug/failpoints                     every point's state
//	GET    /debug/failpoints/{name}?hits=N&waiting=N&timeout=D
//	                                             long-poll until the point has ≥N hits / ≥N paused hits
//	POST   /debug/failpoints/{name}              {"action":"pause|crash|off","count":N} (or ?action=&count=)
//	POST   /debug/failpoints/{name}/release      let paused hits go on, keep the point armed
//	DELETE /debug/failpoints/{name}              off, and release paused hits
func mountFailpoints(mux *http.ServeMux, f *failpoints) {
	mux.Handle("GET /debug/failpoints", f.loopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		out := make([]failpointState, 0, len(failpointNames))
		for _, n := range slices.Sorted(slices.Values(failpointNames)) {
			st, _ := f.state(n)
			out = append(out, st)
		}
		writeJSON(w, http.StatusOK, out)
	})))
	mux.Handle("GET /debug/failpoints/{name}", f.loopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		q := r.URL.Query()
		minHits, _ := strconv.Atoi(q.Get("hits"))
		minWaiting, _ := strconv.Atoi(q.Get("waiting"))
		timeout := 30 * time.Second
		if d, err := time.ParseDuration(q.Get("timeout")); err == nil && d > 0 {
			timeout = d
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		st, err := f.wait(ctx, name, minHits, minWaiting)
		switch {
		case errors.Is(err, errUnknownFailpoint):
			writeError(w, http.StatusNotFound, "unknown_failpoint", err.Error())
		case err != nil:
			writeJSON(w, http.StatusRequestTimeout, st)
		default:
			writeJSON(w, http.StatusOK, st)
		}
	})))
	mux.Handle("POST /debug/failpoints/{name}", f.loopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Action string `json:"action"`
			Count  int    `json:"count"`
		}
		if r.ContentLength != 0 {
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
				writeError(w, http.StatusBadRequest, "bad_request", "body must be {\"action\":...,\"count\":...}")
				return
			}
		}
		if a := r.URL.Query().Get("action"); a != "" {
			req.Action = a
		}
		if c := r.URL.Query().Get("count"); c != "" {
			req.Count, _ = strconv.Atoi(c)
		}
		failpointSetResponse(w, f, r.PathValue("name"), f.set(r.PathValue("name"), req.Action, req.Count))
	})))
	mux.Handle("POST /debug/failpoints/{name}/release", f.loopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failpointSetResponse(w, f, r.PathValue("name"), f.releaseWaiters(r.PathValue("name")))
	})))
	mux.Handle("DELETE /debug/failpoints/{name}", f.loopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failpointSetResponse(w, f, r.PathValue("name"), f.set(r.PathValue("name"), fpOff, 0))
	})))
}

func failpointSetResponse(w http.ResponseWriter, f *failpoints, name string, err error) {
	switch {
	case errors.Is(err, errUnknownFailpoint):
		writeError(w, http.StatusNotFound, "unknown_failpoint", err.Error())
	case err != nil:
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	default:
		st, _ := f.state(name)
		writeJSON(w, http.StatusOK, st)
	}
}

// allowed says whether host is in one of the allowed networks.
func (f *failpoints) allowed(host string) bool {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range f.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
