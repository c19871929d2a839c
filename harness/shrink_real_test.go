package harness_test

import (
	"context"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// A deliberately failing 50-intent plan — a service that re-executes a
// duplicate it finds in flight, and a few double clicks among fifty intents —
// shrinks to the few intents that show it, against the real reference.
func TestShrink_FiftyIntentsToAtMostThree(t *testing.T) {
	s, err := scenarios.Parse("shrink.yaml", []byte(`target: {reference: {}}
traffic: {intents: 50, concurrency: 8, spread: 300ms, retry: {max_retry_after: 100ms}}
faults:
  - {kind: double-click, params: {copies: 3, spread: 2ms}, when: {fraction: 0.1}}
  - {kind: slow-db, params: {latency: 10ms}, when: {at: 0s}}
invariants: [in-flight-conflict]`))
	if err != nil {
		t.Fatal(err)
	}
	r := runner(t)
	opts := harness.RunOptions{Seed: 5, Mutant: "processing-reexecutes"}
	o, err := r.Run(context.Background(), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Caught()) == 0 {
		t.Fatalf("the 50-intent plan did not fail; nothing to shrink (history %s)", o.HistoryPath)
	}
	res, err := r.Shrink(context.Background(), s, opts, 0, o.Steps[0].Plan, "in-flight-conflict", harness.ShrinkBudget{Runs: 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shrunk from %d to %d intents in %d runs:\n%s", res.From, len(res.Plan.Intents), res.Runs, res.Plan.Describe())
	if res.From != 50 || len(res.Plan.Intents) > 3 || res.Outcome == nil {
		t.Fatalf("shrunk from %d to %d intents (outcome %v), want 50 → ≤ 3", res.From, len(res.Plan.Intents), res.Outcome != nil)
	}
}
