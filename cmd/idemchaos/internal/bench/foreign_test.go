package bench_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
	"github.com/idemchaos/idemchaos/examples/foreign"
)

// foreignReport has one correct service with a false alarm and one flawed
// service caught at every seed.
func foreignReport() *bench.Report {
	return &bench.Report{
		Sections: []bench.SectionRun{{Name: bench.SectionForeign}},
		Foreign: &bench.ForeignResult{FalseAlarms: 1, Cases: []bench.ForeignCase{
			{Name: "ledger", Seeds: 2, Right: 1, Verdicts: map[foreign.Verdict]int{foreign.Clean: 1, foreign.FalseAlarm: 1},
				Bad:       []foreign.SeedResult{{Seed: 2, Verdict: foreign.FalseAlarm, Violated: []string{"reuse-rejected"}, Detail: "check 3/6 reuse-rejected: violation", History: "/tmp/l.jsonl"}},
				KnownMiss: "validation before the key"},
			{Name: "ledger-cached-5xx", Class: "i", Expect: "eventually-decided", Seeds: 2, Right: 2,
				Verdicts: map[foreign.Verdict]int{foreign.Caught: 2}},
		}},
	}
}

func TestReport_ForeignSection(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := foreignReport().Markdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| false alarms on the foreign corpus's correct services | 0 | 1 | **missed** |",
		"| misses on the foreign corpus's flawed services | 0 | 0 | met |",
		"| ledger | — | clean | **1/2** | 2 | clean 1, false-alarm 1 |",
		"| ledger-cached-5xx | i | eventually-decided | 2/2 | 2 | caught 2 |",
		"- ledger seed 2: **false-alarm** [reuse-rejected] — check 3/6 reuse-rejected: violation (history `/tmp/l.jsonl`)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	err := foreignReport().Gate()
	if !errors.Is(err, bench.ErrGate) || !strings.Contains(err.Error(), "foreign ledger seed 2: false-alarm") {
		t.Errorf("Gate() = %v, want the foreign false alarm", err)
	}
	clean := foreignReport()
	clean.Foreign.Cases[0].Bad, clean.Foreign.FalseAlarms = nil, 0
	if err := clean.Gate(); err != nil {
		t.Errorf("Gate() on a clean foreign section = %v", err)
	}
}
