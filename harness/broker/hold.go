package broker

import (
	"sync"
	"time"
)

// RestartHold holds a hop's new consumer connections while its broker
// restarts in place, so that a consumer's reconnect waits for the new
// process instead of being refused. Its zero value holds nothing.
type RestartHold struct {
	mu   sync.Mutex
	open chan struct{} // non-nil while a restart is under way
}

// Pause starts holding new connections.
func (r *RestartHold) Pause() {
	r.mu.Lock()
	r.open = make(chan struct{})
	r.mu.Unlock()
}

// Resume lets the held connections and every later one on.
func (r *RestartHold) Resume() {
	r.mu.Lock()
	if r.open != nil {
		close(r.open)
		r.open = nil
	}
	r.mu.Unlock()
}

// Wait waits while a restart is under way: true once none is, false when
// it gave up (after holdAtMost, or when done closes: the hop is closing).
// A broker that does not come back cuts the connection then.
func (r *RestartHold) Wait(done <-chan struct{}) bool {
	r.mu.Lock()
	open := r.open
	r.mu.Unlock()
	if open == nil {
		return true
	}
	t := time.NewTimer(holdAtMost)
	defer t.Stop()
	select {
	case <-open:
		return true
	case <-done:
	case <-t.C:
	}
	return false
}

// holdAtMost bounds a held connection's wait: longer than any restart.
const holdAtMost = 30 * time.Second
