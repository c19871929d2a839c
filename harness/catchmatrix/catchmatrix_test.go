package catchmatrix

import (
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
)

// A mutant counts as caught only by its expected invariant: a run that
// trips another one does not show the mutant's pitfall.
func TestMatrixRow_CatchesOnlyByTheExpectedInvariant(t *testing.T) {
	t.Parallel()
	run := func(violated ...string) *harness.Outcome {
		var res []checkers.Result
		for _, n := range violated {
			res = append(res, checkers.Result{Name: n, Verdict: checkers.Violated})
		}
		return &harness.Outcome{Steps: []harness.StepOutcome{{Result: checkers.Result{Verdict: checkers.Violated, Results: res}}}}
	}
	row := Row{Mutant: "no-lease", Expected: "eventually-decided"}
	if row.catches(run("exactly-once")) {
		t.Error("a violation of another invariant counted as the catch")
	}
	if row.catches(nil) || row.catches(&harness.Outcome{}) {
		t.Error("no run, or a clean one, counted as a catch")
	}
	if !row.catches(run("exactly-once", "eventually-decided")) {
		t.Error("a violation of the expected invariant did not count")
	}
}
