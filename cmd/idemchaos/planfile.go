package main

import (
	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/planfile"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// readPlan reads a --plan file and checks it against the first step of
// every scenario it will replace the plan of.
func readPlan(path string, ss []*scenarios.Scenario) (harness.Plan, error) {
	var p harness.Plan
	for _, s := range ss {
		var err error
		if p, err = planfile.Read(path, s, 0); err != nil {
			return p, err
		}
	}
	return p, nil
}
