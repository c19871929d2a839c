package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/report"
)

// TestWriteSeeds_FailuresAndOneTallyPerScenario: a run over many seeds
// prints the lines of its failures only (every seed's with verbose) and
// ends with one tally line per scenario; it used to print every seed's
// lines and no tally.
func TestWriteSeeds_FailuresAndOneTallyPerScenario(t *testing.T) {
	t.Parallel()
	run := func(scenario string, seed int64, verdict string, met bool) report.Run {
		return report.Run{Scenario: scenario, Seed: seed, Verdict: verdict, Met: met,
			Steps: []report.Step{{Expect: "clean", Met: met, Verdict: verdict}}}
	}
	rep := report.New([]report.Run{
		run("orders", 1, "pass", true), run("orders", 2, "violation", false), run("orders", 3, "unknown", false),
		run("refunds", 1, "pass", true), run("refunds", 2, "pass", true),
	})
	var quiet, loud bytes.Buffer
	writeSeeds(&quiet, rep, false)
	writeSeeds(&loud, rep, true)
	for _, want := range []string{"FAIL  orders (seed 2)", "UNKNOWN orders (seed 3)",
		"TALLY orders: 1 passed, 1 failed, 1 inconclusive (3 seeds)", "TALLY refunds: 2 passed, 0 failed, 0 inconclusive (2 seeds)"} {
		if !strings.Contains(quiet.String(), want) {
			t.Errorf("missing %q:\n%s", want, quiet.String())
		}
	}
	if strings.Contains(quiet.String(), "PASS") {
		t.Errorf("passing seeds printed without -v:\n%s", quiet.String())
	}
	if n := strings.Count(loud.String(), "PASS  "); n != 3 {
		t.Errorf("%d passing lines with -v, want 3:\n%s", n, loud.String())
	}
	if n := strings.Count(quiet.String(), "TALLY"); n != 2 {
		t.Errorf("%d tally lines, want one per scenario:\n%s", n, quiet.String())
	}
}
