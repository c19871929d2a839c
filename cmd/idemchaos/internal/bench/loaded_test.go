package bench_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
)

// The loaded section states what loaded the machine and splits the runs
// that did not pass into inconclusive ones and errors (the gate's two
// targets), for the quick gate and for storm; without a load it is absent.
func TestReport_LoadedSection(t *testing.T) {
	t.Parallel()
	rep := report()
	rep.Options.Seeds = 2
	rep.Detection.Reference = []bench.RunVerdict{{Verdict: bench.VerdictPass}, {Verdict: bench.VerdictError, Reason: "history: line 3"}}
	rep.FalseAlarms.Seeds, rep.FalseAlarms.Pass, rep.FalseAlarms.Inconclusive = 4, 2, 2
	rep.FalseAlarms.Bad = append(rep.FalseAlarms.Bad, bench.RunVerdict{Scenario: "storm", Seed: 4, Verdict: bench.VerdictError, Reason: "boom"})
	var plain bytes.Buffer
	if err := rep.Markdown(&plain); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "loaded machine") {
		t.Fatal("a run without --loaded has a loaded section")
	}
	rep.Load = &bench.Load{How: "2 × `stress-ng --cpu 1`", Load1Start: 2.5, Load1End: 3.25}
	var md bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Gate on a loaded machine",
		"2 × `stress-ng --cpu 1` running alongside (1-min load average 2.50",
		"| quick gate: bundled suite, seed 1 | 2 | 1 | 0 | 0 | 1 |",
		"| quick gate: mutants × 2 seeds, escapes | 2 mutants | | | | 1 escapes |",
		"| `storm` × 4 seeds | 4 | 2 | 0 | 1 | 1 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}
