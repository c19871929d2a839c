package harness

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/scenarios"
)

// decisionBound is the bound the driver judges overdue keys by (see
// driver.Config.DecisionBound): eventually-decided's, when the scenario
// checks it; 0 otherwise, and then no retry stops early.
func decisionBound(s *scenarios.Scenario) time.Duration {
	c, err := s.CheckerContract()
	if err != nil {
		return 0
	}
	for _, n := range s.InvariantNames() {
		if n == "eventually-decided" {
			return c.DecisionBound
		}
	}
	return 0
}

// settling counts the step's timed faults that may still write a heal
// event while the traffic runs: one not applied yet, one still applying (a
// crash waits for its failpoint, then restarts), one whose duration has
// not run out. A fault that lasts until the step ends heals after the
// traffic, where no key's clock can see it.
type settling struct{ left atomic.Int32 }

func newSettling(n int) *settling {
	s := &settling{}
	s.left.Store(int32(n))
	return s
}

// one returns the function that says one fault can no longer heal during
// the traffic; calling it again does nothing.
func (s *settling) one() func() { return sync.OnceFunc(func() { s.left.Add(-1) }) }

// settled says no timed fault can heal any more during the traffic.
func (s *settling) settled() bool { return s.left.Load() == 0 }
