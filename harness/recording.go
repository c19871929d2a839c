package harness

import (
	"context"

	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/internal/env"
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

// ResolveLoopback applies run's rule to addr (host:port): every address
// the host resolves to must be loopback (a refusal names setting, e.g.
// "--upstream"). It returns the first checked address: connect there, not
// to a later lookup of the name. `idemchaos record` checks its upstream
// and listen address with it.
func ResolveLoopback(ctx context.Context, addr, setting string) (string, error) {
	addrs, err := env.ResolveLoopback(ctx, nil, addr, setting)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}
