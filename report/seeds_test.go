package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/report"
)

// TestWriteText_RecordingHasNoSeed: a checked recording (real traffic,
// drawn from no seed) prints no "seed 0"; a checked run's history keeps
// its seed.
func TestWriteText_RecordingHasNoSeed(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	report.WriteText(&b, report.New([]report.Run{
		{File: "rec.jsonl", History: "rec.jsonl", Verdict: "pass", Met: true},
		{Scenario: "orders", File: "run.jsonl", History: "run.jsonl", Seed: 7, Verdict: "pass", Met: true},
	}))
	if strings.Contains(b.String(), "seed 0") || !strings.Contains(b.String(), "PASS  rec.jsonl\n") {
		t.Errorf("a recording's line:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "seed 7") {
		t.Errorf("a run's history lost its seed:\n%s", b.String())
	}
}
