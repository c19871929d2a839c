package harness

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ErrRemoteNotAllowed is wrapped by the refusal of a scenario that
// declares target.allow_remote on a run without --allow-remote.
var ErrRemoteNotAllowed = errors.New("remote target not allowed")

// gateOf is the address gate of a run: the command line's --allow-remote
// (never a scenario's), names from hostsFile first ("" = /etc/hosts).
func gateOf(allowRemote bool, hostsFile string) *addrgate.Gate {
	return addrgate.New(addrgate.Config{AllowRemote: allowRemote, HostsFile: hostsFile})
}

// gate is the runner's address gate: loopback only unless [Open] was told
// --allow-remote.
func (r *Runner) gate() *addrgate.Gate {
	if r.addrs == nil {
		return addrgate.Loopback()
	}
	return r.addrs
}

// CheckRemote refuses a scenario that declares target.allow_remote when the
// command line did not say --allow-remote: a file alone cannot send
// traffic off the machine, so its declaration only says which flag the run
// needs. The refusal points at the key (file:line:col).
func CheckRemote(s *scenarios.Scenario, allowRemote bool) error {
	if !s.Target.AllowRemote || allowRemote {
		return nil
	}
	return fmt.Errorf("%s: target.allow_remote: %s declares a target off this machine, and a scenario file cannot allow that by itself: pass --allow-remote to run it: %w",
		s.Where("target.allow_remote"), s.Name, ErrRemoteNotAllowed)
}

// checkScenarioAddresses puts what the scenarios name through the gate
// before anything starts: their remote declarations, the http oracle's URL
// and the sql oracle's DSN (every host of it). A refusal points at the
// setting in its file.
func checkScenarioAddresses(ctx context.Context, g *addrgate.Gate, ss []*scenarios.Scenario) error {
	for _, s := range ss {
		if err := CheckRemote(s, g.AllowRemote()); err != nil {
			return err
		}
		if err := checkOracleAddress(ctx, g, s); err != nil {
			return err
		}
	}
	return nil
}

// checkOracleAddress checks the address a scenario's oracle reads: the
// http oracle's effects.url, the sql oracle's effects.dsn.
func checkOracleAddress(ctx context.Context, g *addrgate.Gate, s *scenarios.Scenario) error {
	switch {
	case s.Effects.Oracle == "http":
		u, err := url.Parse(s.Effects.URL)
		if err != nil || u.Host == "" {
			return fmt.Errorf("%s: effects.url %q: want http(s)://host[:port]/path", s.Where("effects.url"), s.Effects.URL)
		}
		if _, err := g.Resolve(ctx, netaddr.HostPort(u), "effects.url"); err != nil {
			return fmt.Errorf("%s: %w", s.Where("effects.url"), err)
		}
	case s.Effects.Oracle == "sql" && s.Effects.DSN != "":
		if err := g.CheckDSN(ctx, s.Effects.DSN, "effects.dsn"); err != nil {
			return fmt.Errorf("%s: %w", s.Where("effects.dsn"), err)
		}
	}
	return nil
}
