package harness

import (
	"context"
	"errors"

	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/internal/proxy"
)

func init() { sut.Register(string(EnvExternal), openExternal) }

// externalEnv is a user's service, already running, behind the harness's
// proxies.
type externalEnv struct{ ext *env.External }

var (
	_ sut.Environment     = externalEnv{}
	_ sut.DatabaseProxied = externalEnv{}
)

func openExternal(ctx context.Context, cfg sut.Config) (sut.Environment, error) {
	ext, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: cfg.TargetURL, Gate: cfg.Gate,
		DatabaseAddr: cfg.DatabaseAddr, DatabaseListen: cfg.DatabaseListen, ToxiproxyURL: cfg.ToxiproxyURL})
	if err != nil {
		return nil, err
	}
	return externalEnv{ext}, nil
}

func (e externalEnv) Proxies() proxy.Server           { return e.ext.Proxies() }
func (e externalEnv) Standby() sut.ReplicaDelayer     { return nil }
func (e externalEnv) Close(ctx context.Context) error { return e.ext.Close(ctx) }
func (e externalEnv) DatabaseProxyAddr() string       { return e.ext.DatabaseProxyAddr() }

// StartTarget wraps the user's service, already behind the proxy: every
// run of the environment talks to the same one.
func (e externalEnv) StartTarget(_ context.Context, spec sut.TargetSpec) (*sut.Target, error) {
	if spec.Target.Reference != nil {
		return nil, errors.New("a reference target needs the local environment")
	}
	dbProxy := ""
	if e.ext.DatabaseProxyAddr() != "" {
		dbProxy = env.DatabaseProxy
	}
	// The checked address, not the name: a name is not looked up again.
	return &sut.Target{ClientURL: e.ext.ServiceURL(), ServiceURL: e.ext.TargetURL(), ServiceProxy: env.ServiceProxy,
		DatabaseProxy: dbProxy, DSN: spec.EffectsDSN, DebugURLs: map[string]string{},
		Close: func(context.Context) error { return nil }}, nil
}
