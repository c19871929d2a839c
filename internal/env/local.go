package env

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/proc"
	"github.com/idemchaos/idemchaos/internal/proxy"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

// LocalConfig configures [StartLocal]. The zero value is a primary from the
// binaries found on this machine and an in-process Toxiproxy in a new run
// directory.
type LocalConfig struct {
	// BinDir holds the Postgres server binaries; empty means
	// [pgcluster.FindBinDir].
	BinDir string
	// Run is the run directory to use. Nil means a new one, owned (and
	// removed) by the environment.
	Run *runenv.Run
	// Standby also starts a hot standby, for the replica-lag fault.
	Standby bool
	// ApplyDelay is the standby's initial recovery_min_apply_delay.
	ApplyDelay time.Duration
	// ToxiproxyURL, if set, drives that toxiproxy-server instead of an
	// in-process one.
	ToxiproxyURL string

	_ struct{}
}

// Local is the embedded environment: a Postgres primary (and standby if
// asked), a Toxiproxy with a "db" proxy in front of the primary, and the
// child processes started through it.
type Local struct {
	run     *runenv.Run
	ownRun  bool
	cluster *pgcluster.Cluster
	proxies proxy.Server
	dbProxy string

	mu     sync.Mutex
	procs  []*proc.Process
	closed bool
}

// findBinDir is the Postgres binary lookup; a test seam.
var findBinDir = pgcluster.FindBinDir

// noEnvironmentHelp is what to do when no Postgres binaries are found.
const noEnvironmentHelp = `no PostgreSQL server binaries found (looked on PATH, at pg_config --bindir and in /usr/lib/postgresql/*/bin).
Either install them:
    Debian/Ubuntu: apt-get install postgresql-15   (any version >= 13 works)
    Fedora/RHEL:   dnf install postgresql-server
    macOS:         brew install postgresql@15
or test an existing service instead:
    --env external --target http://127.0.0.1:8080 [--dsn postgres://user@127.0.0.1:5432/db]`

// StartLocal starts the local environment. Without Postgres binaries it
// fails, before it starts anything, with an error matching
// [ErrNoEnvironment] that says what to install.
func StartLocal(ctx context.Context, cfg LocalConfig) (*Local, error) {
	if cfg.BinDir == "" {
		dir, err := findBinDir(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrNoEnvironment, noEnvironmentHelp)
		}
		cfg.BinDir = dir
	}
	l := &Local{run: cfg.Run}
	if l.run == nil {
		r, err := runenv.Open(ctx, runenv.Options{})
		if err != nil {
			return nil, fmt.Errorf("local env: %w", err)
		}
		l.run, l.ownRun = r, true
	}
	var err error
	if cfg.ToxiproxyURL != "" {
		l.proxies, err = proxy.Connect(ctx, cfg.ToxiproxyURL)
	} else {
		l.proxies = proxy.NewInProcess()
	}
	if err != nil {
		_ = l.Close(context.Background())
		return nil, fmt.Errorf("local env: %w", err)
	}
	l.cluster, err = pgcluster.Start(ctx, pgcluster.Config{BinDir: cfg.BinDir, Run: l.run,
		Standby: cfg.Standby, ApplyDelay: cfg.ApplyDelay})
	if err != nil {
		_ = l.Close(context.Background())
		return nil, fmt.Errorf("local env: %w", err)
	}
	// The service reaches Postgres through a proxy, so DB faults (slow-db,
	// a cut connection) have somewhere to act.
	if l.dbProxy, err = l.proxies.CreateProxy(ctx, DatabaseProxy, "", l.cluster.Addr()); err != nil {
		_ = l.Close(context.Background())
		return nil, fmt.Errorf("local env: %w", err)
	}
	return l, nil
}

// DatabaseProxyAddr is the host:port of the "db" proxy in front of the
// primary.
func (l *Local) DatabaseProxyAddr() string { return l.dbProxy }

// ProxiedDSN rewrites a URL DSN of the primary (as [pgcluster.Cluster.DSN]
// and CreateDatabase return) to go through the "db" proxy. Give the service
// this DSN; give the effect oracle the direct one.
func (l *Local) ProxiedDSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("proxied dsn: %q is not a postgres:// URL", dsn)
	}
	u.Host = l.dbProxy
	return u.String(), nil
}

// Proxies is the Toxiproxy the environment's faults go through.
func (l *Local) Proxies() proxy.Server { return l.proxies }

// Primary is the Postgres primary.
func (l *Local) Primary() *pgcluster.Cluster { return l.cluster }

// Standby is the hot standby, or nil if [LocalConfig.Standby] was not set.
func (l *Local) Standby() *pgcluster.Standby { return l.cluster.Standby() }

// Run is the run directory everything lives in.
func (l *Local) Run() *runenv.Run { return l.run }

// StartProcess starts a supervised child (e.g. `idemchaos reference
// serve`) that the environment stops on Close. An empty spec.LogPath gets a
// log file in the run directory.
func (l *Local) StartProcess(ctx context.Context, spec proc.Spec) (*proc.Process, error) {
	if spec.LogPath == "" {
		dir, err := l.run.NewDir("c", -1, -1)
		if err != nil {
			return nil, fmt.Errorf("process directory: %w", err)
		}
		spec.LogPath = filepath.Join(dir, filepath.Base(spec.Path)+".log")
	}
	p, err := proc.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = p.Stop(ctx)
		return nil, runenv.ErrClosed
	}
	l.procs = append(l.procs, p)
	return p, nil
}

// Close stops the child processes, the proxies and the clusters, and removes
// the run directory if the environment opened it. It is idempotent.
func (l *Local) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	procs := l.procs
	l.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		errs = append(errs, procs[i].Stop(ctx))
	}
	if l.proxies != nil {
		errs = append(errs, l.proxies.Close(ctx))
	}
	if l.cluster != nil {
		errs = append(errs, l.cluster.Close(ctx))
	}
	if l.ownRun {
		errs = append(errs, l.run.Close(ctx))
	}
	return errors.Join(errs...)
}
