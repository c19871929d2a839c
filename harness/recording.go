package harness

import (
	"context"

	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ScenarioOracle is the effect oracle a scenario on a user's service names
// (sql or http), made where every oracle is made; nil when it names none
// or the reference's (which needs a started target). `idemchaos check
// --effects` reads a recording's effects with it. Its addresses go
// through the address gate like a run's: loopback unless allowRemote (the
// command line's --allow-remote; the scenario's target.allow_remote then
// demands it), each refusal at the setting's file:line:col, before any
// connection.
func ScenarioOracle(ctx context.Context, s *scenarios.Scenario, allowRemote bool) (oracle.Oracle, error) {
	if s.Effects.Oracle == "reference" {
		return nil, nil
	}
	g := gateOf(allowRemote, "")
	if err := checkScenarioAddresses(ctx, g, []*scenarios.Scenario{s}); err != nil {
		return nil, err
	}
	return oracleFor(g, s, "", false), nil
}
