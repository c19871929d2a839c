package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/internal/proc"
	"github.com/idemchaos/idemchaos/internal/proxy"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

func init() { sut.Register(string(EnvLocal), openLocal) }

// localEnv is the embedded environment: the reference runs as child
// processes of this binary on a throwaway Postgres.
type localEnv struct{ local *env.Local }

var (
	_ sut.Environment     = localEnv{}
	_ sut.HarnessDatabase = localEnv{}
)

func openLocal(ctx context.Context, cfg sut.Config) (sut.Environment, error) {
	local, err := env.StartLocal(ctx, env.LocalConfig{Standby: cfg.Standby, ToxiproxyURL: cfg.ToxiproxyURL})
	if err != nil {
		return nil, err
	}
	return localEnv{local}, nil
}

func (e localEnv) Proxies() proxy.Server           { return e.local.Proxies() }
func (e localEnv) DatabaseDied() error             { return e.local.Primary().Exited() }
func (e localEnv) Close(ctx context.Context) error { return e.local.Close(ctx) }

// Standby is the local standby, or nil (never a typed nil).
func (e localEnv) Standby() sut.ReplicaDelayer {
	if sb := e.local.Standby(); sb != nil {
		return sb
	}
	return nil
}

func (e localEnv) StartTarget(ctx context.Context, spec sut.TargetSpec) (*sut.Target, error) {
	if spec.Target.Reference == nil {
		return nil, errors.New("a url target needs the external environment")
	}
	return startReference(ctx, e.local, *spec.Target.Reference, spec)
}

var targetSeq atomic.Int64

// startReference starts a fresh reference service (and consumer) with its
// own database in the local environment: every run starts from nothing.
func startReference(ctx context.Context, local *env.Local, ref scenarios.ReferenceTarget, spec sut.TargetSpec) (*sut.Target, error) {
	n := targetSeq.Add(1)
	db := fmt.Sprintf("run_%d_%d", os.Getpid(), n)
	dsn, err := local.Primary().CreateDatabase(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("reference target: %w", err)
	}
	if err := reference.Migrate(ctx, dsn); err != nil {
		return nil, fmt.Errorf("reference target: %w", err)
	}
	proxied, err := local.ProxiedDSN(dsn)
	if err != nil {
		return nil, err
	}
	t := &sut.Target{DSN: dsn, DatabaseProxy: env.DatabaseProxy, DebugURLs: map[string]string{}, Processes: map[string]faults.Process{}}
	port, err := netaddr.FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	t.ServiceURL = "http://" + addr
	serve := sut.ChildSpec{Role: "serve", DSN: proxied, Addr: addr, Mutant: spec.Mutant, Lease: ref.Lease,
		Retention: ref.Retention, RetryWindow: ref.RetryWindow, Tokens: sut.ByToken(spec.Tokens),
		ExecuteKeyless: spec.ExecuteKeyless}
	// The correct service never reads the replica; a mutant that declares
	// it does gets one whenever the environment has a standby.
	if sb := local.Standby(); sb != nil {
		// The database was made on the primary a moment ago: the service
		// pings its replica DSN as it starts.
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := sb.CatchUp(cctx, local.Primary())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("reference target: %w", err)
		}
		serve.ReplicaDSN = sb.DSNFor(db)
	} else if ref.Replica || spec.MutantStandby {
		return nil, errors.New("reference target: a replica is needed but the environment has no standby")
	}
	service, err := startChild(ctx, local, serve, proc.HTTPReady(t.ServiceURL+"/healthz"))
	if err != nil {
		return nil, fmt.Errorf("reference target: start service: %w", err)
	}
	t.DebugURLs["service"], t.Processes["service"] = t.ServiceURL, supervised{service}
	children := []*proc.Process{service}
	if ref.Consumer || spec.MutantConsumer {
		cport, err := netaddr.FreePort()
		if err != nil {
			return nil, err
		}
		caddr := "127.0.0.1:" + strconv.Itoa(cport)
		consume := sut.ChildSpec{Role: "consume", DSN: proxied, Addr: caddr, Mutant: spec.Mutant,
			VisibilityTimeout: ref.VisibilityTimeout, PollInterval: 20 * time.Millisecond}
		consumer, err := startChild(ctx, local, consume, proc.HTTPReady("http://"+caddr+"/debug/failpoints"))
		if err != nil {
			_ = service.Stop(ctx)
			return nil, fmt.Errorf("reference target: start consumer: %w", err)
		}
		t.DebugURLs["consumer"], t.Processes["consumer"] = "http://"+caddr, supervised{consumer}
		children = append(children, consumer)
	}
	if err := t.Expose(ctx, local.Proxies(), db, addr); err != nil {
		return nil, fmt.Errorf("reference target: %w", err)
	}
	t.Close = func(ctx context.Context) error {
		errs := []error{local.Proxies().RemoveProxy(ctx, t.ServiceProxy)}
		for _, p := range children {
			errs = append(errs, p.Stop(ctx))
		}
		// The database goes with the cluster; dropping it here would only
		// add time to every run.
		return errors.Join(errs...)
	}
	return t, nil
}

func startChild(ctx context.Context, local *env.Local, spec sut.ChildSpec, ready proc.Ready) (*proc.Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	kv, err := sut.ChildEnvValue(spec)
	if err != nil {
		return nil, err
	}
	return local.StartProcess(ctx, proc.Spec{Path: exe, Env: []string{kv}, Ready: ready,
		ReadyTimeout: 20 * time.Second, StopGrace: 2 * time.Second})
}
