package dockerenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/proxy"
)

// Config configures [Start].
type Config struct {
	// Images are the Postgres and Toxiproxy images (see [Client.ResolveImages]).
	Images Images
	// Standby also starts a streaming standby of the primary.
	Standby bool
	// ProxyPorts is how many proxy ports the Toxiproxy container publishes
	// on 127.0.0.1 (default 32): every proxy the harness reaches from the
	// host takes one; more at once wait for one to be freed.
	ProxyPorts int
	// PauseImage and PauseEnv run the pause container of every
	// [ContainerSpec.Pod]: a process that idles until stopped.
	PauseImage string
	PauseEnv   []string
	_          struct{}
}

// Env is a started docker environment.
type Env struct {
	c       *Client
	cfg     Config
	run     string
	owner   string
	network *dockertest.Network
	primary *Container
	standby *Container
	toxi    *Container
	proxies *pooled

	mu         sync.Mutex
	containers []*Container
	closed     bool
	// spares are pause containers started ahead for the next pod on each
	// port, and idle the ones whose pod was discarded (see
	// [Container.Discard]): a run then waits only for its own service
	// container.
	spares   map[int]*sparePause
	idle     map[int][]*Container
	spareSeq int
	// bg is the background work (spares, removals) Close joins, and bgErrs
	// what it failed with.
	bg     sync.WaitGroup
	bgErrs []error
}

// sparePause is a pause container being started, or started, for a
// later pod: done is closed when c or err is set.
type sparePause struct {
	done chan struct{}
	c    *Container
	err  error
}

// pgSettings match the local environment's tuning (durability traded for
// speed; the data is thrown away).
var pgSettings = []string{"listen_addresses=*", "fsync=off", "synchronous_commit=off", "full_page_writes=off",
	"shared_buffers=32MB", "max_connections=200", "wal_level=replica", "max_wal_senders=10",
	"hot_standby=on", "wal_writer_delay=10ms", "jit=off", "log_min_messages=warning"}

// primaryScript starts the primary on the local image's build-time
// cluster, or (any other image, e.g. the official one) runs initdb first.
var primaryScript = "if [ -s " + pgTemplateDir + "/data/PG_VERSION ]; then exec postgres -D " + pgTemplateDir + "/data " + postgresArgs() + "; fi; " +
	"initdb -D /tmp/pgdata -U postgres --auth=trust -E UTF8 --locale=C --no-sync >/dev/null && " +
	"printf 'host all all all trust\\nhost replication all all trust\\n' >> /tmp/pgdata/pg_hba.conf && exec postgres -D /tmp/pgdata " + postgresArgs()

func postgresArgs() string {
	s := "-k /tmp"
	for _, kv := range pgSettings {
		s += " -c " + kv
	}
	return s
}

// Start starts the environment: a private network, a Postgres primary (and
// standby) and a toxiproxy-server, each labelled with this run. On error
// everything already started is removed.
func (c *Client) Start(ctx context.Context, cfg Config) (*Env, error) {
	if cfg.ProxyPorts <= 0 {
		cfg.ProxyPorts = 32
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := &Env{c: c, cfg: cfg, run: "idemchaos-" + hex.EncodeToString(b[:]), owner: ownerLabel()}
	nw, err := c.pool.CreateNetwork(e.run, func(o *dc.CreateNetworkOptions) {
		o.Labels = e.labels()
		o.Context = ctx
	})
	if err != nil {
		return nil, fmt.Errorf("docker env: network: %w", err)
	}
	e.network = nw
	fail := func(err error) (*Env, error) {
		_ = e.Close(context.Background())
		return nil, fmt.Errorf("docker env: %w", err)
	}
	// The primary and toxiproxy start side by side. From the local image
	// the standby starts beside them too: a copy of the same cleanly shut
	// down build-time cluster is a valid base backup of the primary.
	// Otherwise it takes a base backup once the primary is up.
	var wg sync.WaitGroup
	var perr, terr, serr error
	if cfg.Standby {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.standby, serr = e.startStandby(ctx, cfg.Images.Postgres)
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		e.primary, perr = e.RunContainer(ctx, ContainerSpec{Name: "pg", Image: cfg.Images.Postgres, User: "postgres", Port: 5432, Tmpfs: true,
			Entrypoint: []string{"sh", "-c", primaryScript},
			Ready:      pgReady})
	}()
	go func() {
		defer wg.Done()
		e.toxi, e.proxies, terr = e.startToxiproxy(ctx, cfg.Images.Toxiproxy, cfg.ProxyPorts)
	}()
	wg.Wait()
	if err := errors.Join(perr, terr, serr); err != nil {
		return fail(err)
	}
	return e, nil
}

// startStandby starts the streaming standby of the primary (named
// "<run>-pg", resolved when the standby connects).
func (e *Env) startStandby(ctx context.Context, image string) (*Container, error) {
	primary := e.run + "-pg"
	conninfo := "-c primary_conninfo='host=" + primary + " user=postgres'"
	script := "if [ -s " + pgTemplateDir + "/data/PG_VERSION ]; then : > " + pgTemplateDir + "/data/standby.signal && exec postgres -D " + pgTemplateDir + "/data " + postgresArgs() + " " + conninfo + "; fi; " +
		"until pg_basebackup -h " + primary + " -U postgres -D /tmp/pgdata -R -X stream -c fast --no-sync 2>/dev/null; do rm -rf /tmp/pgdata 2>/dev/null; done; exec postgres -D /tmp/pgdata " + postgresArgs()
	return e.RunContainer(ctx, ContainerSpec{Name: "pg-standby", Image: image, User: "postgres", Port: 5432, Tmpfs: true,
		Entrypoint: []string{"sh", "-c", script}, Ready: standbyReady})
}

// standbyReady wants the standby up, in recovery and streaming.
func standbyReady(ctx context.Context, c *Container) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, "postgres://postgres@"+c.HostAddr()+"/postgres?sslmode=disable")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var streaming bool
	if err := conn.QueryRow(cctx, "SELECT pg_is_in_recovery() AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming')").Scan(&streaming); err != nil {
		return err
	}
	if !streaming {
		return errors.New("standby not streaming yet")
	}
	return nil
}

func (e *Env) labels() map[string]string {
	return map[string]string{LabelRun: e.run, LabelOwner: e.owner}
}

// Run is the environment's name: its network's, and every container's
// prefix.
func (e *Env) Run() string { return e.run }

// RunContainer starts a container on the environment's network, labelled
// with the run and named "<run>-<spec.Name>", and waits until it is ready.
func (e *Env) RunContainer(ctx context.Context, spec ContainerSpec) (*Container, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, errors.New("docker env: closed")
	}
	t0 := time.Now()
	if err := e.c.EnsureImage(spec.Image); err != nil {
		return nil, err
	}
	Trace(spec.Name+" ensure-image", t0)
	var pause *Container
	if spec.Pod {
		if e.cfg.PauseImage == "" {
			return nil, errors.New("docker env: a pod needs Config.PauseImage")
		}
		var err error
		tp := time.Now()
		pause, err = e.takePause(ctx, spec.Port)
		Trace(spec.Name+" take pause", tp)
		if err != nil {
			return pause, err
		}
		spec.Port = 0
	}
	repo, tag := splitImage(spec.Image)
	opts := &dockertest.RunOptions{Name: e.run + "-" + spec.Name, Repository: repo, Tag: tag, Env: spec.Env,
		Entrypoint: spec.Entrypoint, Cmd: spec.Cmd, User: spec.User, Networks: []*dockertest.Network{e.network},
		Labels: e.labels()}
	if pause != nil {
		opts.Networks = nil
	}
	var (
		res       *dockertest.Resource
		err       error
		hostAddr  string
		extraHost map[int]string
	)
	// Host ports are chosen here (a restart must keep them) and may be
	// taken by someone else before the daemon binds them: try again.
	for range 4 {
		hostAddr, extraHost, err = bindPorts(opts, spec)
		if err != nil {
			return nil, err
		}
		t1 := time.Now()
		res, err = e.c.pool.RunWithOptions(opts, func(hc *dc.HostConfig) {
			hc.PublishAllPorts = false // only what is asked, and only on 127.0.0.1
			hc.Init = true             // a real init as PID 1: a process's SIGKILL of itself works
			hc.AutoRemove = false
			hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
			if pause != nil {
				hc.NetworkMode = "container:" + pause.ID()
			}
			if spec.Tmpfs {
				hc.Tmpfs = map[string]string{"/tmp": "rw,mode=1777"}
			}
		})
		Trace(spec.Name+" run", t1)
		if err == nil {
			break
		}
		// A container created but not started stays behind: remove it.
		_ = e.c.pool.RemoveContainerByName(opts.Name)
		if !strings.Contains(err.Error(), "port is already allocated") && !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		if pause != nil {
			_ = pause.Stop(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Image, err)
	}
	if err := checkPublished(res); err != nil {
		_ = e.c.pool.RemoveContainerByName(opts.Name)
		if pause != nil {
			_ = pause.Stop(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Image, err)
	}
	c := &Container{env: e, spec: spec, res: res, hostAddr: hostAddr, extraHost: extraHost, pause: pause}
	if pause != nil {
		c.hostAddr = pause.hostAddr
	}
	e.mu.Lock()
	closed = e.closed
	if !closed {
		e.containers = append(e.containers, c)
	}
	e.mu.Unlock()
	if closed {
		// Started in the background while Close was listing what to
		// remove: remove it here.
		return nil, errors.Join(errors.New("docker env: closed"), c.Stop(context.WithoutCancel(ctx)))
	}
	c.watch()
	t2 := time.Now()
	err = c.waitReady(ctx)
	Trace(spec.Name+" ready", t2)
	if pause != nil {
		// The next pod's pause container starts once this pod is up, not
		// beside it (the daemon is slow at starting two containers at
		// once), unless one is idle.
		e.mu.Lock()
		if len(e.idle[pause.spec.Port]) == 0 && e.spares[pause.spec.Port] == nil {
			e.startSpareLocked(pause.spec.Port)
		}
		e.mu.Unlock()
	}
	return c, err
}

// PreparePod starts, in the background, the pause container of the next
// [ContainerSpec.Pod] that publishes port, unless one is already there.
func (e *Env) PreparePod(port int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.spares[port] == nil {
		e.startSpareLocked(port)
	}
}

// startSpareLocked starts a spare pause container for port in the
// background. e.mu is held.
func (e *Env) startSpareLocked(port int) {
	if e.closed || e.cfg.PauseImage == "" {
		return
	}
	if e.spares == nil {
		e.spares = map[int]*sparePause{}
	}
	e.spareSeq++
	sp := &sparePause{done: make(chan struct{})}
	e.spares[port] = sp
	name := fmt.Sprintf("pod%d", e.spareSeq)
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		defer close(sp.done)
		// Never handed out when it failed: the pod that wanted it starts
		// one itself, and says why if that fails too.
		sp.c, sp.err = e.RunContainer(context.Background(), ContainerSpec{Name: name, Image: e.cfg.PauseImage, Env: e.cfg.PauseEnv, Port: port})
	}()
}

// takePause returns a pause container publishing port with nothing in
// its network namespace: an idle one whose pod's container was removed,
// the spare started ahead, or a new one.
func (e *Env) takePause(ctx context.Context, port int) (*Container, error) {
	e.mu.Lock()
	for len(e.idle[port]) > 0 {
		c := e.idle[port][0]
		e.idle[port] = e.idle[port][1:]
		select {
		case <-c.Exited():
			e.mu.Unlock()
			_ = c.Stop(context.WithoutCancel(ctx))
			e.mu.Lock()
			continue
		default:
		}
		e.mu.Unlock()
		return c, nil
	}
	sp := e.spares[port]
	delete(e.spares, port)
	e.mu.Unlock()
	if sp != nil {
		select {
		case <-sp.done:
			if sp.err == nil {
				select {
				case <-sp.c.Exited():
					_ = sp.c.Stop(context.WithoutCancel(ctx))
				default:
					return sp.c, nil
				}
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e.mu.Lock()
	e.spareSeq++
	name := fmt.Sprintf("pod%d", e.spareSeq)
	e.mu.Unlock()
	return e.RunContainer(ctx, ContainerSpec{Name: name, Image: e.cfg.PauseImage, Env: e.cfg.PauseEnv, Port: port})
}

// forget drops a removed container from what Close removes. (A new
// slice: Close may be ranging over the old one.)
func (e *Env) forget(c *Container) {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := make([]*Container, 0, len(e.containers))
	for _, x := range e.containers {
		if x != c {
			kept = append(kept, x)
		}
	}
	e.containers = kept
}

// maxIdle bounds the idle pause containers kept per port.
const maxIdle = 2

// putIdle keeps a pause container, whose pod's container is removed, for
// a later pod; it reports false when enough are kept already.
func (e *Env) putIdle(c *Container) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	port := c.spec.Port
	if e.closed || len(e.idle[port]) >= maxIdle {
		return false
	}
	if e.idle == nil {
		e.idle = map[int][]*Container{}
	}
	e.idle[port] = append(e.idle[port], c)
	return true
}

// Go runs f in the background; Close waits for it before removing the
// containers, and returns its error. It reports false (and does not run
// f) once the environment is closed.
func (e *Env) Go(f func() error) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		if err := f(); err != nil {
			e.mu.Lock()
			e.bgErrs = append(e.bgErrs, err)
			e.mu.Unlock()
		}
	}()
	return true
}

// pgReady connects to the published port as postgres.
func pgReady(ctx context.Context, c *Container) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, "postgres://postgres@"+c.HostAddr()+"/postgres?sslmode=disable")
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// HTTPReady returns a Ready that wants a 2xx from path on the published
// port. (A published port accepts connections as soon as the container
// runs, so a TCP dial proves nothing.)
func HTTPReady(path string) func(ctx context.Context, c *Container) error {
	return func(ctx context.Context, c *Container) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.HostAddr()+path, nil)
		if err != nil {
			return err
		}
		resp, err := readyClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return nil
	}
}

// AnyHTTPReady wants any HTTP answer on the published port: a user's
// service has no known health path, but answering HTTP at all means it
// listens.
func AnyHTTPReady(ctx context.Context, c *Container) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.HostAddr()+"/", nil)
	if err != nil {
		return err
	}
	resp, err := readyClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

var readyClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// Subnet is the private network's address range: the containers' clients
// (the harness, through the published ports' gateway) come from it.
func (e *Env) Subnet() (netip.Prefix, error) {
	for _, c := range e.network.Network.IPAM.Config {
		if p, err := netip.ParsePrefix(c.Subnet); err == nil {
			return p, nil
		}
	}
	nw, err := e.c.pool.Client.NetworkInfo(e.network.Network.ID)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("network %s: %w", e.run, err)
	}
	for _, c := range nw.IPAM.Config {
		if p, err := netip.ParsePrefix(c.Subnet); err == nil {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("network %s has no subnet", e.run)
}

// Primary is the Postgres primary container.
func (e *Env) Primary() *Container { return e.primary }

// Standby is the standby container, or nil.
func (e *Env) Standby() *Container { return e.standby }

// Proxies is the toxiproxy-server, through the harness's view: a proxy
// created with an empty listen address takes a published port and its
// returned address is on 127.0.0.1.
func (e *Env) Proxies() proxy.Server { return e.proxies }

// InternalProxy creates a proxy reachable only inside the network (e.g.
// service → database) and returns its address there.
func (e *Env) InternalProxy(ctx context.Context, name, upstream string) (string, error) {
	return e.proxies.createInternal(ctx, name, upstream)
}

// DSN is the primary's DSN for database db from this machine (published
// port), for the effect oracle and set-up.
func (e *Env) DSN(db string) string {
	return "postgres://postgres@" + e.primary.HostAddr() + "/" + url.PathEscape(db) + "?sslmode=disable"
}

// NetDSN is the DSN of database db at addr (host:port on the network).
func NetDSN(addr, db string) string {
	return "postgres://postgres@" + addr + "/" + url.PathEscape(db) + "?sslmode=disable"
}

// CreateDatabase creates an empty database on the primary.
func (e *Env) CreateDatabase(ctx context.Context, db string) error {
	conn, err := pgx.Connect(ctx, e.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("create database %s: %w", db, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", db, err)
	}
	return nil
}

// SetApplyDelay changes the standby's recovery_min_apply_delay at run time
// (ALTER SYSTEM, then pg_reload_conf), as the local standby does; unlike
// it, it does not wait for the reload to take effect.
func (e *Env) SetApplyDelay(ctx context.Context, d time.Duration) error {
	if e.standby == nil {
		return errors.New("set apply delay: no standby")
	}
	conn, err := pgx.Connect(ctx, "postgres://postgres@"+e.standby.HostAddr()+"/postgres?sslmode=disable")
	if err != nil {
		return fmt.Errorf("set apply delay: connect: %w", err)
	}
	defer conn.Close(context.Background())
	return pgcluster.ApplyDelay(ctx, conn, d)
}

// Close removes every container and the network. It is idempotent.
func (e *Env) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.bg.Wait()
	e.mu.Lock()
	cs := e.containers
	errs := e.bgErrs
	e.mu.Unlock()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Stop(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if e.network != nil {
		errs = append(errs, ignoreMissingNetwork(e.c.pool.Client.RemoveNetwork(e.network.Network.ID)))
	}
	// Connect reaped what dead harnesses left, but the daemon finishes the
	// requests a SIGKILLed harness had in flight (a create, a start) after
	// its death, and those containers appear later: reap again on the way
	// out. Another run's leftovers are no error of this one.
	_, _ = e.c.Reap(ctx)
	return errors.Join(errs...)
}

// checkPublished puts every port binding the daemon reports for a started
// container through the address gate: whatever was asked, a daemon (its
// "ip" setting, a rewriting proxy) may publish on every interface, and the
// Postgres and proxies behind those ports trust every client.
func checkPublished(res *dockertest.Resource) error {
	if res.Container == nil || res.Container.NetworkSettings == nil {
		return nil
	}
	for port, bindings := range res.Container.NetworkSettings.Ports {
		for _, b := range bindings {
			if _, err := addrgate.Published(b.HostIP, b.HostPort); err != nil {
				return fmt.Errorf("port %s: %w", port, err)
			}
		}
	}
	return nil
}

// bindPorts sets opts' published ports to free 127.0.0.1 ports and returns
// the main port's address and the extra ports' addresses.
func bindPorts(opts *dockertest.RunOptions, spec ContainerSpec) (string, map[int]string, error) {
	opts.ExposedPorts, opts.PortBindings = nil, map[dc.Port][]dc.PortBinding{}
	hostAddr, extraHost := "", map[int]string{}
	ports := spec.extraPorts
	if spec.Port > 0 {
		ports = append([]int{spec.Port}, ports...)
	}
	for i, cp := range ports {
		port, err := netaddr.FreePort()
		if err != nil {
			return "", nil, err
		}
		p := dc.Port(strconv.Itoa(cp) + "/tcp")
		opts.ExposedPorts = append(opts.ExposedPorts, string(p))
		opts.PortBindings[p] = []dc.PortBinding{{HostIP: addrgate.PublishIP, HostPort: strconv.Itoa(port)}}
		addr, err := addrgate.Published(addrgate.PublishIP, strconv.Itoa(port))
		if err != nil {
			return "", nil, err
		}
		if i == 0 && spec.Port > 0 {
			hostAddr = addr
		} else {
			extraHost[cp] = addr
		}
	}
	return hostAddr, extraHost, nil
}
