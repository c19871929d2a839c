package harness

import (
	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ScenarioOracle is the effect oracle a scenario on a user's service names
// (sql or http), made where every oracle is made; nil when it names none
// or the reference's (which needs a started target). `idemchaos check
// --effects` reads a recording's effects with it.
func ScenarioOracle(s *scenarios.Scenario) oracle.Oracle {
	if s.Effects.Oracle == "reference" {
		return nil
	}
	return oracleFor(s, "", false)
}
