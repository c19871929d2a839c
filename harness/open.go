package harness

import (
	"context"
	"fmt"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/scenarios"
)

// OpenOptions say which environment to start for a set of scenarios.
type OpenOptions struct {
	// Kind is local, external or auto ("" = auto: external when TargetURL
	// is set, else local).
	Kind env.Kind
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
	// Standby forces a streaming standby in the local environment. It is
	// started anyway when a scenario, one of its faults or one of Mutants
	// needs one.
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
	// environment's images ("" = the defaults; see [dockerenv.Images]).
	PGImage, ToxiproxyImage, ReferenceImage string
	_                                       struct{}
}

// Open starts the environment the scenarios need and returns a runner for
// it, and the function that stops it and removes everything it made.
func Open(ctx context.Context, opts OpenOptions) (*Runner, func(context.Context) error, error) {
	g := gateOf(opts.AllowRemote, opts.HostsFile)
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
	if kind == "" || kind == env.KindAuto {
		kind = env.KindLocal
		if opts.TargetURL != "" {
			kind = env.KindExternal
		} else if imageTargets(opts.Scenarios) {
			kind = env.KindDocker
		}
	}
	switch kind {
	case env.KindExternal:
		ext, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: opts.TargetURL, Gate: g, DatabaseAddr: opts.DatabaseAddr, DatabaseListen: opts.DatabaseListen, ToxiproxyURL: opts.ToxiproxyURL})
		if err != nil {
			return nil, nil, err
		}
		return &Runner{External: ext}, ext.Close, nil
	case env.KindLocal:
		standby, err := needsStandby(opts)
		if err != nil {
			return nil, nil, err
		}
		if _, err := env.Resolve(ctx, env.Options{Kind: env.KindAuto}); err != nil {
			return nil, nil, err
		}
		local, err := env.StartLocal(ctx, env.LocalConfig{Standby: standby, ToxiproxyURL: opts.ToxiproxyURL})
		if err != nil {
			return nil, nil, err
		}
		return &Runner{Local: local}, local.Close, nil
	case env.KindDocker:
		standby, err := needsStandby(opts)
		if err != nil {
			return nil, nil, err
		}
		d, err := openDocker(ctx, opts, standby)
		if err != nil {
			return nil, nil, err
		}
		return &Runner{Docker: d}, d.env.Close, nil
	}
	return nil, nil, fmt.Errorf("%w %q", env.ErrUnknownKind, kind)
}

// needsStandby says whether a local environment must have a streaming
// standby: forced, asked for by a reference scenario or one of its faults,
// or declared by a mutant the runs will use.
func needsStandby(opts OpenOptions) (bool, error) {
	need := opts.Standby
	for _, name := range opts.Mutants {
		m, err := LookupMutant(name)
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

// imageTargets says whether a scenario's target is a service image.
func imageTargets(ss []*scenarios.Scenario) bool {
	for _, s := range ss {
		if s.Target.Image != "" {
			return true
		}
	}
	return false
}
