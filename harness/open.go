package harness

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/scenarios"
)

// OpenOptions say which environment to start for a set of scenarios.
type OpenOptions struct {
	// Kind is the environment ("" = [EnvAuto]: external when TargetURL is
	// set, docker when a scenario's target is a service image, else local).
	Kind EnvKind
	// TargetURL is the user's service for external runs.
	TargetURL string
	// AllowRemote is the command line's --allow-remote: addresses off this
	// machine pass the address gate (target, database, oracles, Toxiproxy,
	// listeners). A scenario's target.allow_remote only demands it.
	AllowRemote bool
	// DatabaseAddr, for external runs, is the service's database: the
	// harness proxies it so DB faults work (point the service at the proxy).
	DatabaseAddr string
	// DatabaseListen is where that proxy listens (default a free port on
	// 127.0.0.1): a fixed address lets the service's configuration name it.
	DatabaseListen string
	// Standby forces a streaming standby in the local or docker
	// environment. It is started anyway when a scenario, one of its faults
	// or one of Mutants needs one.
	Standby bool
	// Mutants are the mutants the runs will use: those that declare a
	// need (a standby) get it.
	Mutants []string
	// ToxiproxyURL drives that toxiproxy-server's API instead of the
	// in-process Toxiproxy (e.g. http://127.0.0.1:8474).
	ToxiproxyURL string
	// Scenarios are inspected for what they need.
	Scenarios []*scenarios.Scenario
	// HostsFile is where the address gate looks names up first ("" =
	// /etc/hosts); names it does not know need DNS, asked only with
	// AllowRemote.
	HostsFile string
	// PGImage, ToxiproxyImage and ReferenceImage choose the docker
	// environment's images ("" = its defaults; see harness/docker).
	PGImage, ToxiproxyImage, ReferenceImage string
	_                                       struct{}
}

// Open starts the environment the scenarios need and returns a runner for
// it, and the function that stops it and removes everything it made. For
// a user's service it first checks that every fault finds the hooks it
// declares in its scenario. Every address the scenarios and opts name goes
// through the address gate before anything starts.
func Open(ctx context.Context, opts OpenOptions) (*Runner, func(context.Context) error, error) {
	g := gateOf(opts.AllowRemote, opts.HostsFile)
	// The target first: an effects.url moved with it names the same host,
	// and a refusal of that host is the target's, not the oracle's.
	if opts.TargetURL != "" {
		if u, err := url.Parse(opts.TargetURL); err == nil && u.Host != "" {
			if _, err := g.Resolve(ctx, netaddr.HostPort(u), "--target"); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := checkScenarioAddresses(ctx, g, opts.Scenarios); err != nil {
		return nil, nil, err
	}
	if opts.ToxiproxyURL != "" {
		u, err := g.PinURL(ctx, opts.ToxiproxyURL, "--toxiproxy")
		if err != nil {
			return nil, nil, err
		}
		opts.ToxiproxyURL = u.String()
	}
	r, closeEnv, err := open(ctx, opts, g)
	if err != nil {
		return nil, nil, err
	}
	r.addrs = g
	return r, closeEnv, nil
}

// open starts the environment of opts, whose addresses g has checked.
func open(ctx context.Context, opts OpenOptions, g *addrgate.Gate) (*Runner, func(context.Context) error, error) {
	kind := opts.Kind
	if kind == "" || kind == EnvAuto {
		kind = autoKind(opts.TargetURL, opts.Scenarios...)
	}
	start, ok := sut.Lookup(string(kind))
	switch {
	case !ok && kind == EnvDocker:
		return nil, nil, fmt.Errorf("the docker environment is not linked into this program: import _ %q", "github.com/idemchaos/idemchaos/harness/docker")
	case !ok:
		return nil, nil, fmt.Errorf("unknown environment kind %q (known: %s)", kind, strings.Join(sut.Names(), ", "))
	}
	cfg, err := envConfig(kind, opts, g)
	if err != nil {
		return nil, nil, err
	}
	e, err := start(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return &Runner{env: e, kind: kind}, e.Close, nil
}

// envConfig is what the environment of that kind needs to start: a standby
// for the reference (local, docker), the user's service and the gate its
// addresses go through (external).
func envConfig(kind EnvKind, opts OpenOptions, g *addrgate.Gate) (sut.Config, error) {
	cfg := sut.Config{TargetURL: opts.TargetURL, Gate: g, DatabaseAddr: opts.DatabaseAddr,
		DatabaseListen: opts.DatabaseListen, ToxiproxyURL: opts.ToxiproxyURL,
		PGImage: opts.PGImage, ToxiproxyImage: opts.ToxiproxyImage, ReferenceImage: opts.ReferenceImage}
	if kind == EnvExternal {
		for _, s := range opts.Scenarios {
			if err := checkHooks(s); err != nil {
				return cfg, err
			}
		}
		return cfg, nil
	}
	var err error
	cfg.Standby, err = needsStandby(opts)
	return cfg, err
}

// needsStandby says whether a local environment must have a streaming
// standby: forced, asked for by a reference scenario or one of its faults,
// or declared by a mutant the runs will use.
func needsStandby(opts OpenOptions) (bool, error) {
	need := opts.Standby
	for _, name := range opts.Mutants {
		m, err := lookupMutant(name)
		if err != nil {
			return false, err
		}
		need = need || m.Standby
	}
	for _, s := range opts.Scenarios {
		if s.Target.Reference == nil {
			continue
		}
		need = need || s.Target.Reference.Replica || scenarioNeedsStandby(s)
	}
	return need, nil
}

// scenarioNeedsStandby says whether a fault of any step needs a standby.
func scenarioNeedsStandby(s *scenarios.Scenario) bool {
	for i := range s.EffectiveSteps() {
		fs, err := buildFaults(s, i)
		if err != nil {
			return false // Run reports it
		}
		for _, f := range fs {
			if faults.NeedsStandby(f.fault) {
				return true
			}
		}
	}
	return false
}

// checkHooks refuses a scenario for an external target whose faults need a
// hook it does not set.
func checkHooks(s *scenarios.Scenario) error {
	for i := range s.EffectiveSteps() {
		fs, err := buildFaults(s, i)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		for _, f := range fs {
			var missing []string
			for _, h := range faults.HooksOf(f.fault) {
				if strings.TrimSpace(s.Hooks.Named(h)) == "" {
					missing = append(missing, "hooks."+h)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("%s: %s on an external target needs %s in the scenario", s.Name, f.spec.Kind, strings.Join(missing, " and "))
			}
		}
	}
	return nil
}
