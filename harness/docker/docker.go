package docker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/internal/dockerenv"
	"github.com/idemchaos/idemchaos/internal/proxy"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// The name harness.Open knows this environment by (harness.EnvDocker).
func init() { sut.Register("docker", openEnv) }

// Options configure [Open].
type Options struct {
	// Standby also starts a streaming standby of the primary.
	Standby bool
	// PGImage, ToxiproxyImage and ReferenceImage choose the images ("" =
	// the defaults: the official images when present, else the local ones
	// `idemchaos images build` makes; the reference image is built from
	// this module when absent).
	PGImage, ToxiproxyImage, ReferenceImage string
	_                                       struct{}
}

// Env is a docker environment started on its own by [Open], outside a
// harness.Runner: what `idemchaos bench` times.
type Env struct{ d *dockerEnv }

// Open starts the docker environment as harness.Open does for
// harness.EnvDocker.
func Open(ctx context.Context, opts Options) (*Env, error) {
	d, err := open(ctx, sut.Config{Standby: opts.Standby, PGImage: opts.PGImage, ToxiproxyImage: opts.ToxiproxyImage, ReferenceImage: opts.ReferenceImage})
	if err != nil {
		return nil, err
	}
	return &Env{d: d}, nil
}

// Close stops every container and removes the network.
func (e *Env) Close(ctx context.Context) error { return e.d.Close(ctx) }

// dockerEnv is the docker environment as a harness.Runner uses it: the
// environment's containers plus the images targets start from.
type dockerEnv struct {
	env    *dockerenv.Env
	images dockerenv.Images
	seq    atomic.Int64

	// next are the next reference runs' databases, made (created,
	// migrated, their proxies in place) in the background while the
	// current run runs: fresh all the same, since no run has used them.
	mu   sync.Mutex
	next []chan runDB
}

var _ sut.Environment = (*dockerEnv)(nil)

// dbsAhead is how many reference runs' databases are made ahead: making
// one takes longer than a short run under load, mostly CREATE DATABASE.
const dbsAhead = 2

// runDB is one reference run's database and the proxies to it.
type runDB struct {
	n                int64
	db               string
	primary, replica string
	err              error
}

func openEnv(ctx context.Context, cfg sut.Config) (sut.Environment, error) { return open(ctx, cfg) }

// open connects to the daemon (reaping what a killed harness left),
// resolves the images and starts the environment.
func open(ctx context.Context, cfg sut.Config) (*dockerEnv, error) {
	c, err := dockerenv.Connect(ctx)
	if err != nil {
		return nil, err
	}
	// Without a registry nothing can be pulled: images that are not on
	// the engine are built here, with one line on stderr for the wait.
	im, err := c.ProvideImages(ctx, dockerenv.Images{Postgres: cfg.PGImage, Toxiproxy: cfg.ToxiproxyImage, Reference: cfg.ReferenceImage},
		dockerenv.DefaultCatalog, dockerenv.BuildOptions{Log: os.Stderr})
	if err != nil {
		return nil, fmt.Errorf("docker env: %w", err)
	}
	// The reference image also runs the pause containers of every target.
	if cfg.ReferenceImage == "" {
		// The reference image is this binary: build (or find, by hash) it
		// now so that it always matches the harness that drives it.
		if im.Reference, err = c.BuildReference(ctx); err != nil {
			return nil, fmt.Errorf("docker env: %w", err)
		}
	}
	pause, err := sut.ChildEnvValue(sut.ChildSpec{Role: "pause"})
	if err != nil {
		return nil, err
	}
	e, err := c.Start(ctx, dockerenv.Config{Images: im, Standby: cfg.Standby, PauseImage: im.Reference, PauseEnv: []string{pause}})
	if err != nil {
		return nil, err
	}
	d := &dockerEnv{env: e, images: im}
	// The first run's database and pause container start now.
	for range dbsAhead {
		d.next = append(d.next, d.prepareDB())
	}
	e.PreparePod(8080)
	return d, nil
}

// prepareDB starts making a reference run's database in the background.
func (d *dockerEnv) prepareDB() chan runDB {
	ch := make(chan runDB, 1)
	n := d.seq.Add(1)
	r := runDB{n: n, db: fmt.Sprintf("run_%d_%d", os.Getpid(), n)}
	if !d.env.Go(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t0 := time.Now()
		r.primary, r.replica, r.err = d.dbPaths(ctx, r.db)
		if r.err == nil {
			r.err = reference.Migrate(ctx, d.env.DSN(r.db))
		}
		dockerenv.Trace("database made ahead", t0)
		ch <- r
		return nil // the run that takes it reports r.err
	}) {
		r.err = errors.New("docker env: closed")
		ch <- r
	}
	return ch
}

// takeDB returns the oldest database made ahead (waiting for it if it is
// still being made) and starts making the next one.
func (d *dockerEnv) takeDB(ctx context.Context) (runDB, error) {
	d.mu.Lock()
	if len(d.next) == 0 {
		d.next = append(d.next, d.prepareDB())
	}
	ch := d.next[0]
	d.next = append(d.next[1:], d.prepareDB())
	d.mu.Unlock()
	select {
	case r := <-ch:
		return r, r.err
	case <-ctx.Done():
		return runDB{}, ctx.Err()
	}
}

// Proxies is the toxiproxy-server container's API.
func (d *dockerEnv) Proxies() proxy.Server { return d.env.Proxies() }

// Standby is the environment's standby, whose apply delay the environment
// sets, or nil.
func (d *dockerEnv) Standby() sut.ReplicaDelayer {
	if d.env.Standby() == nil {
		return nil
	}
	return d.env
}

// Close stops every container and removes the network.
func (d *dockerEnv) Close(ctx context.Context) error { return d.env.Close(ctx) }

// StartTarget starts the scenario's system under test in containers.
func (d *dockerEnv) StartTarget(ctx context.Context, spec sut.TargetSpec) (*sut.Target, error) {
	switch {
	case spec.Target.Reference != nil:
		return d.startReference(ctx, *spec.Target.Reference, spec.Mutant, spec.MutantStandby, spec.Tokens)
	case spec.Target.Image != "":
		return d.startImage(ctx, spec.Target)
	}
	return nil, errors.New("a url target needs the external environment (--env external)")
}

// dbPaths creates a fresh database and the proxies a service reaches it
// through: the primary always, the standby when there is one.
func (d *dockerEnv) dbPaths(ctx context.Context, db string) (primary, replica string, err error) {
	if err := d.env.CreateDatabase(ctx, db); err != nil {
		return "", "", err
	}
	addr, err := d.env.InternalProxy(ctx, "db-"+db, d.env.Primary().NetAddr(5432))
	if err != nil {
		return "", "", err
	}
	primary = dockerenv.NetDSN(addr, db)
	if sb := d.env.Standby(); sb != nil {
		addr, err := d.env.InternalProxy(ctx, "replica-"+db, sb.NetAddr(5432))
		if err != nil {
			return "", "", err
		}
		replica = dockerenv.NetDSN(addr, db)
	}
	return primary, replica, nil
}

// startReference starts the reference service (and consumer) as
// containers of the reference image, each run on a fresh database.
func (d *dockerEnv) startReference(ctx context.Context, spec scenarios.ReferenceTarget, mutant string, mutantStandby bool, tokens map[string]string) (*sut.Target, error) {
	tStart := time.Now()
	defer dockerenv.Trace("target total", tStart)
	rdb, err := d.takeDB(ctx)
	if err != nil {
		return nil, fmt.Errorf("reference target: %w", err)
	}
	dockerenv.Trace("take db", tStart)
	n, db, proxied, replica, dsn := rdb.n, rdb.db, rdb.primary, rdb.replica, d.env.DSN(rdb.db)
	subnet, err := d.env.Subnet()
	if err != nil {
		return nil, fmt.Errorf("reference target: %w", err)
	}
	// The harness reaches the debug endpoints from the network's gateway,
	// not from loopback.
	allow := []netip.Prefix{subnet}
	serve := sut.ChildSpec{Role: "serve", DSN: proxied, Addr: ":8080", Mutant: mutant, Lease: spec.Lease,
		Retention: spec.Retention, RetryWindow: spec.RetryWindow, Tokens: sut.ByToken(tokens), ReplicaDSN: replica, DebugAllow: allow}
	if replica == "" && (spec.Replica || mutantStandby) {
		return nil, errors.New("reference target: a replica is needed but the environment has no standby")
	}
	t := &sut.Target{DSN: dsn, DatabaseProxy: "db-" + db, DebugURLs: map[string]string{}, Processes: map[string]faults.Process{}}
	var (
		mu      sync.Mutex
		started []*dockerenv.Container
	)
	// The containers are removed in the background (the environment's
	// Close waits for that and reports its errors): the next run need not
	// wait for the daemon.
	t.Close = func(ctx context.Context) error {
		defer dockerenv.Trace("target close", time.Now())
		err := d.removeProxies(ctx, t.ServiceProxy, "db-"+db, "replica-"+db)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range started {
			c.Discard()
		}
		started = nil
		return err
	}
	fail := func(err error) (*sut.Target, error) {
		_ = t.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("reference target: %w", err)
	}
	// runChild starts one role of the reference as a pod container; one
	// that started but never got ready is still the close's to stop.
	runChild := func(role sut.ChildSpec, name string, port int, ready func(context.Context, *dockerenv.Container) error) (*dockerenv.Container, error) {
		kv, err := sut.ChildEnvValue(role)
		if err != nil {
			return nil, err
		}
		c, err := d.env.RunContainer(ctx, dockerenv.ContainerSpec{Name: fmt.Sprintf("%s-%d", name, n), Image: d.images.Reference,
			Env: []string{kv}, Port: port, Pod: true, Ready: ready})
		if c != nil {
			mu.Lock()
			started = append(started, c)
			mu.Unlock()
		}
		return c, err
	}
	// The service and the consumer start side by side.
	var (
		con    *dockerenv.Container
		conErr error
		wg     sync.WaitGroup
	)
	if spec.Consumer {
		consume := sut.ChildSpec{Role: "consume", DSN: proxied, Addr: ":8081", Mutant: mutant,
			VisibilityTimeout: spec.VisibilityTimeout, PollInterval: 20 * time.Millisecond, DebugAllow: allow}
		wg.Add(1)
		go func() {
			defer wg.Done()
			con, conErr = runChild(consume, "con", 8081, dockerenv.HTTPReady("/debug/failpoints"))
		}()
	}
	svc, err := runChild(serve, "ref", 8080, dockerenv.HTTPReady("/healthz"))
	wg.Wait()
	if err != nil {
		return fail(fmt.Errorf("start service: %w", err))
	}
	if conErr != nil {
		return fail(fmt.Errorf("start consumer: %w", conErr))
	}
	t.ServiceURL, t.Upstream = "http://"+svc.HostAddr(), svc.NetAddr(8080)
	t.DebugURLs["service"], t.Processes["service"] = t.ServiceURL, d.gated(svc, t)
	if con != nil {
		t.DebugURLs["consumer"], t.Processes["consumer"] = "http://"+con.HostAddr(), con
	}
	if err := t.Expose(ctx, d.env.Proxies(), db, t.Upstream); err != nil {
		return fail(err)
	}
	return t, nil
}

// removeProxies removes the named proxies; ones never made are no error.
func (d *dockerEnv) removeProxies(ctx context.Context, names ...string) error {
	var errs []error
	for _, n := range names {
		if err := d.env.Proxies().RemoveProxy(ctx, n); err != nil && !errors.Is(err, proxy.ErrProxyNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// startImage starts a user's service image beside its own database, with
// Toxiproxy in front of it and on its database path. Process faults kill
// and restart its container, so it needs no hooks.
func (d *dockerEnv) startImage(ctx context.Context, tgt scenarios.Target) (*sut.Target, error) {
	n := d.seq.Add(1)
	name := fmt.Sprintf("svc-%d", n)
	port := tgt.Port
	if port == 0 {
		port = 8080
	}
	t := &sut.Target{DebugURLs: map[string]string{}, Processes: map[string]faults.Process{}}
	var started *dockerenv.Container
	db := fmt.Sprintf("svc_%d_%d", os.Getpid(), n)
	t.Close = func(ctx context.Context) error {
		errs := []error{d.removeProxies(ctx, t.ServiceProxy, "db-"+db, "replica-"+db)}
		if started != nil {
			started.Discard()
			started = nil
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (*sut.Target, error) {
		_ = t.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("image target %s: %w", tgt.Image, err)
	}
	var envv []string
	for k, v := range tgt.Env {
		envv = append(envv, k+"="+v)
	}
	sort.Strings(envv)
	if tgt.Database != "" {
		proxied, _, err := d.dbPaths(ctx, db)
		if err != nil {
			return fail(err)
		}
		t.DSN, t.DatabaseProxy = d.env.DSN(db), "db-"+db
		dsnEnv := tgt.DSNEnv
		if dsnEnv == "" {
			dsnEnv = "DATABASE_URL"
		}
		envv = append(envv, dsnEnv+"="+proxied)
	}
	c, err := d.env.RunContainer(ctx, dockerenv.ContainerSpec{Name: name, Image: tgt.Image, Env: envv, Port: port, Pod: true,
		Ready: dockerenv.AnyHTTPReady})
	started = c
	if err != nil {
		return fail(err)
	}
	t.ServiceURL, t.Upstream = "http://"+c.HostAddr(), c.NetAddr(port)
	t.Processes["service"] = d.gated(c, t)
	if err := t.Expose(ctx, d.env.Proxies(), db, t.Upstream); err != nil {
		return fail(err)
	}
	return t, nil
}

// gatedProcess is a service container whose restart resets every
// connection through the proxy in front of it until the new process is
// ready. A container takes a while to come back, and clients must not be
// served by it before the harness has recorded it back (the heal): a
// local child is back almost at once, and the same scenarios must judge
// alike. Meanwhile clients are turned away at once, as a dead local
// process's port does. (A toxic, not a disabled proxy: disabling waits
// for the dials in flight to the dead container.)
type gatedProcess struct {
	c *dockerenv.Container
	d *dockerEnv
	t *sut.Target
}

func (d *dockerEnv) gated(c *dockerenv.Container, t *sut.Target) faults.Process {
	return &gatedProcess{c: c, d: d, t: t}
}

func (g *gatedProcess) Kill(ctx context.Context) error { return g.c.Kill(ctx) }
func (g *gatedProcess) Exited() <-chan struct{}        { return g.c.Exited() }

const restartingToxic = "idemchaos-restarting"

func (g *gatedProcess) Restart(ctx context.Context) error {
	px := g.d.env.Proxies()
	err := px.AddToxic(ctx, g.t.ServiceProxy, proxy.Toxic{Name: restartingToxic, Type: "reset_peer", Stream: proxy.Upstream,
		Attributes: map[string]any{"timeout": 0}})
	if err != nil {
		return err
	}
	err = g.c.Restart(ctx)
	return errors.Join(err, px.RemoveToxic(context.WithoutCancel(ctx), g.t.ServiceProxy, restartingToxic))
}

// StartReference starts one correct reference target (its database, the
// service container, its proxies) and returns its stop: what every run
// adds to the environment's start-up, for measurements.
func (e *Env) StartReference(ctx context.Context) (func(context.Context) error, error) {
	t, err := e.d.startReference(ctx, scenarios.ReferenceTarget{}, "", false, map[string]string{"t1": "tok-t1"})
	if err != nil {
		return nil, err
	}
	return t.Close, nil
}
