package report

import (
	"fmt"

	"github.com/idemchaos/idemchaos/harness"
)

// AddInvestigation puts what the follow-up of a failing run found into its
// report: how reproducible it is, and the shrunk plan with where it was
// saved and replay, the command that replays the saved plan.
func (r *Run) AddInvestigation(inv harness.Investigation, replay string) {
	r.Repro = inv.Repro
	sr := inv.Shrunk
	if sr == nil {
		return
	}
	r.Shrunk = &Shrunk{From: sr.From, To: len(sr.Plan.Intents), Runs: sr.Runs, Plan: sr.Plan.Describe()}
	if inv.PlanPath != "" {
		r.Shrunk.Plan += fmt.Sprintf("saved: %s\nreplay it: %s\n", inv.PlanPath, replay)
	}
}
