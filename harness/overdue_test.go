package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// no-lease leaves a "processing" row that answers 409 forever after the
// crash. The stuck key is a violation once it was asked for the decision
// bound after the restart: the run ends there, not when crash-mid-request's
// 10s retry budget (kept for a slow restart) runs out, and the history alone
// proves the violation.
func TestRun_NoLeaseEndsOnceTheKeyIsOverdue(t *testing.T) {
	s, err := scenarios.Load("../scenarios/crash-mid-request.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := runner(t)
	o, err := r.Run(context.Background(), s, harness.RunOptions{Seed: 1, Mutant: "no-lease"})
	if err != nil {
		t.Fatal(err)
	}
	caught := false
	for _, inv := range o.Caught() {
		caught = caught || inv == "eventually-decided"
	}
	if !caught {
		t.Fatalf("caught by %v, want eventually-decided (history %s)", o.Caught(), o.HistoryPath)
	}
	heals := faultEvents(o.History, "crash", "heal")
	if len(heals) != 1 {
		t.Fatalf("%d crash heals, want 1 (history %s)", len(heals), o.HistoryPath)
	}
	bound, budget := s.DecisionBound(), s.Traffic.Retry.Budget
	var last int64
	for _, a := range o.History.Attempts {
		last = max(last, a.Invoke)
	}
	// The key is asked until the bound has passed since its first attempt
	// after the heal; a backoff (≤ 200ms) and a loaded machine's slack later
	// the traffic is over, seconds before the budget would have ended it.
	if after := time.Duration(last - heals[0].NS); after < bound || after > bound+budget/2 {
		t.Errorf("the last attempt went out %s after the heal; want just past the %s bound, well before the %s budget (history %s)",
			after, bound, budget, o.HistoryPath)
	}
}
