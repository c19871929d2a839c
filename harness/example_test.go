package harness_test

import (
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
)

// A case reads like a terraform TestCase: an environment and steps. The
// first step runs a bundled scenario against the correct reference and
// checks two invariants; the second reruns it against a mutant that
// ignores the Idempotency-Key and expects exactly-once to catch it.
func ExampleTest() {
	var t *testing.T // in a test: the test's *testing.T
	harness.Test(t, harness.Case{
		Env: harness.LocalEnv(),
		Steps: []harness.Step{
			{Scenario: "scenarios/response-drop-replay.yaml", Check: checkers.All(checkers.ExactlyOnce(), checkers.ReplayIdentical())},
			{Mutant: "no-key", ExpectViolation: "exactly-once"},
		},
	})
}

// The same, run for real: a lost response must be replayed, not executed
// again, and a service that ignores the key is caught doing exactly that.
func TestExample_ResponseDropReplay(t *testing.T) {
	harness.Test(t, harness.Case{
		Env: harness.LocalEnv(),
		Steps: []harness.Step{
			{Scenario: "../scenarios/response-drop-replay.yaml", Check: checkers.All(checkers.ExactlyOnce(), checkers.ReplayIdentical())},
			{Mutant: "no-key", ExpectViolation: "exactly-once"},
		},
	})
}

// A key reused with another payload must be rejected; the no-fingerprint
// mutant replays the first payload's response instead.
func TestExample_KeyReuse(t *testing.T) {
	harness.Test(t, harness.Case{
		Env: harness.LocalEnv(),
		Steps: []harness.Step{
			{Scenario: "../scenarios/key-reuse.yaml"},
			{Mutant: "no-fingerprint", ExpectViolation: "reuse-rejected"},
		},
	})
}
