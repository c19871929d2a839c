package scaffold_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/scaffold"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/catchmatrix"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

func TestMain(m *testing.M) {
	// The reference service and its consumer run as copies of this binary.
	harness.MaybeChild()
	os.Exit(m.Run())
}

// onReference points a generated file at the bundled reference: what a
// user does with --target and a filled-in effects block, done for the
// reference (whose process faults need no hooks and whose effects the
// reference oracle reads). The result goes through the loader again.
func onReference(t *testing.T, f scaffold.File) *scenarios.Scenario {
	t.Helper()
	text := f.Text
	ref := "reference: {lease: 300ms}"
	if strings.Contains(text, "kind: crash") {
		// The bundled crash, retention, replica and consumer scenarios'
		// reference settings, all at once (as storm runs them).
		ref = "reference: {lease: 300ms, retention: 10s, retry_window: 10s, consumer: true, visibility_timeout: 500ms, replica: true}"
	}
	text = regexp.MustCompile(`(?m)^  url: .*$`).ReplaceAllString(text, "  "+ref)
	text = regexp.MustCompile(`(?m)^  oracle: none.*$`).ReplaceAllString(text, "  oracle: reference")
	s, err := scenarios.Parse(f.Name, []byte(text))
	if err != nil {
		t.Fatalf("%s on the reference: %v", f.Name, err)
	}
	return s
}

// The suite init writes from reference/openapi.yaml must do what the
// bundled suite does: stay clean on the correct reference and catch every
// mutant — within one seed more than the bundled suite needs (it catches
// every one at seed 1: internal/bench's quick test), so by seed 2.
func TestGenerated_CatchesEveryMutantOfTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the reference on Postgres for every mutant")
	}
	d, err := scaffold.Load(t.Context(), "../../../../reference/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, err := scaffold.Generate(d, scaffold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var suite []*scenarios.Scenario
	for _, f := range files {
		suite = append(suite, onReference(t, f))
	}
	ctx := t.Context()
	r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: harness.EnvLocal, Standby: true, Scenarios: suite})
	if err != nil {
		t.Fatal(err)
	}
	defer closeEnv(context.WithoutCancel(ctx))
	r.HistoryDir = t.TempDir()

	m, err := catchmatrix.Run(ctx, r, suite, catchmatrix.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Reference.Clean || m.Reference.Err != nil {
		for _, o := range m.Reference.Runs {
			t.Logf("reference %s: caught %v, history %s", o.Scenario.Name, o.Caught(), o.HistoryPath)
			for _, st := range o.Steps {
				t.Logf("  step %s (expect %s): met=%v verdict=%v reason=%q", st.Name, st.Expect, st.Met, st.Result.Verdict, st.Result.Reason)
				for _, c := range st.Result.Results {
					if c.Verdict != checkers.Pass {
						t.Logf("    %s: %v %s", c.Name, c.Verdict, c.Reason)
						for _, v := range c.Violations[:min(2, len(c.Violations))] {
							t.Logf("      %s", v)
						}
					}
				}
			}
		}
		t.Errorf("the correct reference is not clean under the generated suite: %v (err %v)", m.Reference.By, m.Reference.Err)
	}
	var escaped []string
	for _, row := range m.Mutants {
		t.Logf("seed 1: %-22s caught=%v by %v in %s (%d requests)", row.Mutant, row.Caught, row.By, row.Scenario, row.Requests)
		if !row.Caught {
			escaped = append(escaped, row.Mutant)
		}
	}
	if len(escaped) > 0 {
		m2, err := catchmatrix.Run(ctx, r, suite, catchmatrix.Options{Seed: 2, SkipReference: true, Mutants: escaped})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range m2.Mutants {
			t.Logf("seed 2: %-22s caught=%v by %v in %s (err %v)", row.Mutant, row.Caught, row.By, row.Scenario, row.Err)
			if !row.Caught {
				t.Errorf("mutant %s escaped the generated suite at seeds 1 and 2", row.Mutant)
			}
		}
	}
	if n := len(m.Mutants); n != len(reference.Mutants()) {
		t.Errorf("the matrix ran %d mutants, the reference has %d", n, len(reference.Mutants()))
	}
}
