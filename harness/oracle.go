package harness

import (
	"context"
	"sort"
	"time"

	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ScenarioOracle is the effect oracle a scenario on a user's service names
// (sql or http), made where every oracle is made; nil when it names none
// or the reference's (which needs a started target). `idemchaos check
// --effects` reads a recording's effects with it, and `idemchaos run`
// reads them once before any traffic, to report a wrong DSN, URL or query
// up front. Its addresses go through the address gate like a run's:
// loopback unless allowRemote (the command line's --allow-remote; the
// scenario's target.allow_remote then demands it), each refusal at the
// setting's file:line:col, before any connection; every redirect hop of
// the http oracle and every host of a DSN included.
func ScenarioOracle(ctx context.Context, s *scenarios.Scenario, allowRemote bool) (oracle.Oracle, error) {
	if s.Effects.Oracle == "reference" {
		return nil, nil
	}
	g := gateOf(allowRemote, "")
	if err := checkScenarioAddresses(ctx, g, []*scenarios.Scenario{s}); err != nil {
		return nil, err
	}
	return oracleFor(g, s.Effects, s.Target.Reference, oracleTenants(s), "", false), nil
}

// oracleFor is the one place an effect oracle is made from a scenario's
// effects: the reference's reads its database (dsn), waiting for its
// consumer to drain the queue when one runs; sql and http read the user's
// service (an http oracle with placeholders once per tenant of tenants),
// their connections through g. nil: the scenario reads no effects.
func oracleFor(g *addrgate.Gate, e scenarios.Effects, ref *scenarios.ReferenceTarget, tenants []oracle.Tenant, dsn string, consumer bool) oracle.Oracle {
	switch e.Oracle {
	case "reference":
		drain := time.Duration(0)
		if consumer && ref != nil {
			drain = 10*time.Second + ref.VisibilityTimeout
		}
		return oracle.Reference(dsn, drain)
	case "sql":
		if e.DSN != "" {
			dsn = e.DSN // else an image target's own database
		}
		return oracle.SQL(dsn, e.Query, oracle.Through(g.For("effects.dsn")))
	case "http":
		return oracle.HTTP(oracle.HTTPConfig{URL: e.URL, Headers: e.Headers, Items: e.Items, Tenant: e.Tenant, Key: e.Key, ID: e.ID,
			State: e.State, WrittenAt: e.WrittenAt, Resource: e.Resource, Next: e.Next, Cursor: e.Cursor, Tenants: tenants}, oracle.Through(g.For("effects.url")))
	}
	return nil
}

// oracleTenants are the tenants an http oracle with placeholders reads
// for: every tenant of endpoint.tokens (with its token), else the t1..tN
// the plans draw from. Reading a tenant that sent nothing reads nothing.
func oracleTenants(s *scenarios.Scenario) []oracle.Tenant {
	names := tenantsOf(s)
	if len(s.Endpoint.Tokens) > 0 {
		names = names[:0]
		for tn := range s.Endpoint.Tokens {
			names = append(names, tn)
		}
		sort.Strings(names)
	}
	out := make([]oracle.Tenant, len(names))
	for i, n := range names {
		out[i] = oracle.Tenant{Name: n, Token: s.Endpoint.Tokens[n]}
	}
	return out
}
