package harness_test

import (
	"context"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// The acceptance test of the whole suite: every bundled scenario is clean on
// the correct reference, and every mutant is caught by some scenario.
func TestBundledSuite_CleanOnReferenceAndCatchesEveryMutant(t *testing.T) {
	suite, err := scenarios.Bundled()
	if err != nil {
		t.Fatal(err)
	}
	r := runner(t)
	m, err := r.CatchMatrix(context.Background(), suite, harness.MatrixOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m.Reference.Err != nil {
		t.Errorf("the reference could not be judged: %v", m.Reference.Err)
	}
	for _, o := range m.Reference.Runs {
		if !o.Met() {
			for _, st := range o.Steps {
				t.Errorf("false alarm: %s on the correct reference: %v (history %s)", o.Scenario.Name, st.Result.Failures(), o.HistoryPath)
			}
		}
	}
	if len(m.Mutants) != len(reference.Mutants()) {
		t.Fatalf("the matrix has %d mutants, the reference %d", len(m.Mutants), len(reference.Mutants()))
	}
	for _, row := range m.Mutants {
		if !row.Caught {
			t.Errorf("mutant %s escaped the whole suite (%d runs, %d requests; err %v)", row.Mutant, len(row.Runs), row.Requests, row.Err)
			continue
		}
		t.Logf("%-22s caught by %v in %s (%s, %d requests)", row.Mutant, row.By, row.Scenario, row.Elapsed.Round(1e6), row.Requests)
	}
}
