package harness

import (
	"context"
	"fmt"

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
	// AllowRemote permits a non-loopback target.
	AllowRemote bool
	// DatabaseAddr, for external runs, is the service's database: the
	// harness proxies it so DB faults work (point the service at the proxy).
	DatabaseAddr string
	// DatabaseListen is where that proxy listens (default a free port on
	// 127.0.0.1): a fixed address lets the service's configuration name it.
	DatabaseListen string
	// Standby forces a streaming standby in the local environment (it is
	// started anyway when a scenario needs a replica).
	Standby bool
	// ToxiproxyURL drives that toxiproxy-server's API instead of the
	// in-process Toxiproxy (e.g. http://127.0.0.1:8474).
	ToxiproxyURL string
	// Scenarios are inspected for what they need.
	Scenarios []*scenarios.Scenario
	// PGImage, ToxiproxyImage and ReferenceImage choose the docker
	// environment's images ("" = the defaults; see [dockerenv.Images]).
	PGImage, ToxiproxyImage, ReferenceImage string
	_                                       struct{}
}

// Open starts the environment the scenarios need and returns a runner for
// it, and the function that stops it and removes everything it made.
func Open(ctx context.Context, opts OpenOptions) (*Runner, func(context.Context) error, error) {
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
		ext, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: opts.TargetURL, AllowRemote: allow, DatabaseAddr: opts.DatabaseAddr, DatabaseListen: opts.DatabaseListen, ToxiproxyURL: opts.ToxiproxyURL})
		if err != nil {
			return nil, nil, err
		}
		return &Runner{External: ext}, ext.Close, nil
	case env.KindLocal:
		standby := needsStandby(opts)
		if _, err := env.Resolve(ctx, env.Options{Kind: env.KindAuto}); err != nil {
			return nil, nil, err
		}
		local, err := env.StartLocal(ctx, env.LocalConfig{Standby: standby, ToxiproxyURL: opts.ToxiproxyURL})
		if err != nil {
			return nil, nil, err
		}
		return &Runner{Local: local}, local.Close, nil
	case env.KindDocker:
		d, err := openDocker(ctx, opts, needsStandby(opts))
		if err != nil {
			return nil, nil, err
		}
		return &Runner{Docker: d}, d.env.Close, nil
	}
	return nil, nil, fmt.Errorf("%w %q", env.ErrUnknownKind, kind)
}

func needsStandby(opts OpenOptions) bool {
	standby := opts.Standby
	for _, s := range opts.Scenarios {
		standby = standby || (s.Target.Reference != nil && s.Target.Reference.Replica)
	}
	return standby
}

func imageTargets(ss []*scenarios.Scenario) bool {
	for _, s := range ss {
		if s.Target.Image != "" {
			return true
		}
	}
	return false
}
