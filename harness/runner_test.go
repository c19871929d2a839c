package harness_test

import (
	"os"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// A run in which nothing succeeded (a wrong path here) judged nothing: it is
// inconclusive, never a clean pass.
func TestRun_NothingSucceededIsInconclusive(t *testing.T) {
	o := run(t, `target: {reference: {}}
endpoint: {path: /orders}
traffic: {intents: 3}`, "")
	st := o.Steps[0]
	if st.Result.Verdict != checkers.Unknown || o.Met() || !strings.Contains(st.Result.Reason, "3× 404") {
		t.Fatalf("verdict %s, met %v, reason %q: want unknown, not met, naming the 404s", st.Result.Verdict, o.Met(), st.Result.Reason)
	}
}

// The Go API's ExpectViolation (RunOptions.Expect) is the last step's
// expectation, and the history records it: the run is met when the mutant
// trips it, and a check of the file judges the step alike.
func TestRun_ExpectationReachesTheHistory(t *testing.T) {
	s, err := scenarios.Load("../scenarios/key-reuse.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := runner(t).Run(t.Context(), s, harness.RunOptions{Seed: 1, Mutant: "no-fingerprint", Expect: "reuse-rejected"})
	if err != nil {
		t.Fatal(err)
	}
	last := o.Steps[len(o.Steps)-1]
	if last.Expect != "reuse-rejected" || !last.Met || !o.Met() {
		t.Fatalf("last step expects %s, met %v (%s): want reuse-rejected, met", last.Expect, last.Met, last.Result.Verdict)
	}
	b, err := os.ReadFile(o.HistoryPath)
	if err != nil || !strings.Contains(string(b), `"type":"step"`) || !strings.Contains(string(b), `"expect":"reuse-rejected"`) {
		t.Fatalf("the history does not record the expectation (%v):\n%.600s", err, b)
	}
	sameOffline(t, o)
}
