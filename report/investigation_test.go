package report_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/report"
)

func TestRun_AddInvestigation(t *testing.T) {
	t.Parallel()
	var run report.Run
	run.AddInvestigation(harness.Investigation{Repro: "intermittent (2/3 runs of the same plan failed)"}, "unused")
	if run.Repro != "intermittent (2/3 runs of the same plan failed)" || run.Shrunk != nil {
		t.Fatalf("without a shrunk plan: %+v", run)
	}
	plan := harness.Plan{Seed: 4, Intents: []driver.Intent{{ID: "i3", Tenant: "t1", Key: "k4-3", Method: "POST", Path: "/v1/orders"}}}
	run.AddInvestigation(harness.Investigation{Repro: "reproducible (3/3 runs of the same plan failed)",
		Shrunk: &harness.ShrinkResult{Plan: plan, From: 12, Runs: 9}, PlanPath: "h.jsonl.min-plan.json"},
		"idemchaos run -s s.yaml --seed 4 --plan h.jsonl.min-plan.json")
	sh := run.Shrunk
	if sh == nil || sh.From != 12 || sh.To != 1 || sh.Runs != 9 {
		t.Fatalf("shrunk %+v", sh)
	}
	for _, want := range []string{"seed 4: 1 intents", "saved: h.jsonl.min-plan.json", "replay it: idemchaos run -s s.yaml --seed 4 --plan h.jsonl.min-plan.json"} {
		if !strings.Contains(sh.Plan, want) {
			t.Errorf("shrunk plan %q does not say %q", sh.Plan, want)
		}
	}
}
