package harness

import (
	"time"

	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ScenarioOracle is the effect oracle a scenario on a user's service names
// (sql or http), made where every oracle is made; nil when it names none
// or the reference's (which needs a started target). `idemchaos check
// --effects` reads a recording's effects with it, and `idemchaos run`
// reads them once before any traffic, to report a wrong DSN, URL or query
// up front.
func ScenarioOracle(s *scenarios.Scenario) oracle.Oracle {
	if s.Effects.Oracle == "reference" {
		return nil
	}
	return oracleFor(s.Effects, s.Target.Reference, "", false)
}

// oracleFor is the one place an effect oracle is made from a scenario's
// effects: the reference's reads its database (dsn), waiting for its
// consumer to drain the queue when one runs; sql and http read the user's
// service. nil: the scenario reads no effects.
func oracleFor(e scenarios.Effects, ref *scenarios.ReferenceTarget, dsn string, consumer bool) oracle.Oracle {
	switch e.Oracle {
	case "reference":
		drain := time.Duration(0)
		if consumer && ref != nil {
			drain = 10*time.Second + ref.VisibilityTimeout
		}
		return oracle.Reference(dsn, drain)
	case "sql":
		if e.DSN == "" {
			return oracle.SQL(dsn, e.Query) // an image target's own database
		}
		return oracle.SQL(e.DSN, e.Query)
	case "http":
		return oracle.HTTP(e.URL, e.Items, e.Tenant, e.Key, e.ID)
	}
	return nil
}
