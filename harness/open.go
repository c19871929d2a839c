package harness

import (
	"context"
	"fmt"
	"net/url"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/scenarios"
)

// OpenOptions say which environment to start for a set of scenarios.
type OpenOptions struct {
	// Kind is local, external or auto ("" = auto: external when TargetURL
	// is set, else local).
	Kind env.Kind
	// TargetURL is the user's service for external runs.
	TargetURL string
	// AllowRemote permits a non-loopback target.
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
	// Resolver resolves the host names of the target, the database address
	// and http oracles for the loopback rule (nil: the system's).
	Resolver env.Resolver
	// PGImage, ToxiproxyImage and ReferenceImage choose the docker
	// environment's images ("" = the defaults; see [dockerenv.Images]).
	PGImage, ToxiproxyImage, ReferenceImage string
	_                                       struct{}
}

// Open starts the environment the scenarios need and returns a runner for
// it, and the function that stops it and removes everything it made.
func Open(ctx context.Context, opts OpenOptions) (*Runner, func(context.Context) error, error) {
	if err := checkOracleHosts(ctx, opts); err != nil {
		return nil, nil, err
	}
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
		allow := opts.AllowRemote
		for _, s := range opts.Scenarios {
			allow = allow || s.Target.AllowRemote
		}
		ext, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: opts.TargetURL, AllowRemote: allow, DatabaseAddr: opts.DatabaseAddr, DatabaseListen: opts.DatabaseListen, ToxiproxyURL: opts.ToxiproxyURL, Resolver: opts.Resolver})
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

// checkOracleHosts applies the loopback rule to the oracles, which connect
// too: every address an http oracle's effects.url host, and every host of
// a sql oracle's effects.dsn, resolves to must be loopback unless remote
// targets are allowed.
func checkOracleHosts(ctx context.Context, opts OpenOptions) error {
	for _, s := range opts.Scenarios {
		if opts.AllowRemote || s.Target.AllowRemote {
			continue
		}
		switch {
		case s.Effects.Oracle == "http":
			u, err := url.Parse(s.Effects.URL)
			if err != nil || u.Host == "" {
				return fmt.Errorf("%s: effects.url %q: want http(s)://host[:port]/path", s.Name, s.Effects.URL)
			}
			if _, err := env.ResolveLoopback(ctx, opts.Resolver, netaddr.HostPort(u), "effects.url"); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
		case s.Effects.Oracle == "sql" && s.Effects.DSN != "":
			if err := checkDSN(ctx, opts.Resolver, s.Effects.DSN); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
		}
	}
	return nil
}

// checkDSN is the address gate's DSN check, until the gate (internal/addrgate,
// p-gate) replaces it: every host a DSN names, by its driver's own parser
// (a multi-host Postgres DSN falls back to each), must be loopback; unix
// sockets and files are local.
func checkDSN(ctx context.Context, r env.Resolver, dsn string) error {
	_, eps, err := oracle.DSNEndpoints(dsn)
	if err != nil {
		return fmt.Errorf("effects.dsn: %w", err)
	}
	for _, ep := range eps {
		if ep.Network != "tcp" {
			continue
		}
		if _, err := env.ResolveLoopback(ctx, r, ep.Addr, "effects.dsn"); err != nil {
			return err
		}
	}
	return nil
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
