package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/internal/proc"
	"github.com/idemchaos/idemchaos/internal/proxy"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// target is a started system under test: where clients send traffic, where
// the service really is, and how to reach its processes and its effects.
type target struct {
	clientURL  string // through the service proxy: what the driver uses
	serviceURL string // the service itself, behind no fault
	svcProxy   string // name of the service proxy
	dbProxy    string // name of the database proxy ("" for none)
	dsn        string // direct DSN for the effect oracle ("" for none)
	tokens     map[string]string
	// upstream is the service's address as the proxies see it, when that
	// differs from serviceURL's host (a container on the docker network).
	upstream string
	// procs are processes that are not local children (containers).
	procs map[string]faults.Process

	service  *proc.Process
	consumer *proc.Process
	debugURL map[string]string // process → base URL of its failpoint endpoint
	close    func(ctx context.Context) error
}

// hasConsumer says whether an outbox consumer runs beside the service, as
// a local child or a container: the effects are read once it has drained
// the queue, or a redelivery after its restart would be missed.
func (t *target) hasConsumer() bool { return t.consumer != nil || t.procs["consumer"] != nil }

var targetSeq atomic.Int64

// expose puts the service proxy of database db in front of upstream: the
// driver's way to the service (clientURL), where the service faults act.
func (t *target) expose(ctx context.Context, px proxy.Server, db, upstream string) error {
	t.svcProxy = "svc-" + db
	listen, err := px.CreateProxy(ctx, t.svcProxy, "", upstream)
	if err != nil {
		return err
	}
	t.clientURL = "http://" + listen
	return nil
}

// startReference starts a fresh reference service (and consumer) with its
// own database in the local environment: every run starts from nothing.
func startReference(ctx context.Context, local *env.Local, spec scenarios.ReferenceTarget, mutant string, tokens map[string]string) (*target, error) {
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
	t := &target{dsn: dsn, dbProxy: env.DatabaseProxy, tokens: tokens, debugURL: map[string]string{}}
	port, err := netaddr.FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	t.serviceURL = "http://" + addr
	byToken := make(map[string]string, len(tokens))
	for tenant, tok := range tokens {
		byToken[tok] = tenant
	}
	mu, err := LookupMutant(mutant)
	if err != nil {
		return nil, fmt.Errorf("reference target: %w", err)
	}
	serve := childSpec{Role: "serve", DSN: proxied, Addr: addr, Mutant: mutant, Lease: spec.Lease,
		Retention: spec.Retention, RetryWindow: spec.RetryWindow, Tokens: byToken}
	// The correct service never reads the replica; a mutant that declares
	// it does gets one whenever the environment has a standby.
	if sb := local.Standby(); sb != nil {
		serve.ReplicaDSN = sb.DSNFor(db)
	} else if spec.Replica || mu.Standby {
		return nil, errors.New("reference target: a replica is needed but the environment has no standby")
	}
	if t.service, err = startChild(ctx, local, serve, proc.HTTPReady(t.serviceURL+"/healthz")); err != nil {
		return nil, fmt.Errorf("reference target: start service: %w", err)
	}
	t.debugURL["service"] = t.serviceURL
	if spec.Consumer || mu.Consumer {
		cport, err := netaddr.FreePort()
		if err != nil {
			return nil, err
		}
		caddr := "127.0.0.1:" + strconv.Itoa(cport)
		consume := childSpec{Role: "consume", DSN: proxied, Addr: caddr, Mutant: mutant,
			VisibilityTimeout: spec.VisibilityTimeout, PollInterval: 20 * time.Millisecond}
		if t.consumer, err = startChild(ctx, local, consume, proc.HTTPReady("http://"+caddr+"/debug/failpoints")); err != nil {
			_ = t.service.Stop(ctx)
			return nil, fmt.Errorf("reference target: start consumer: %w", err)
		}
		t.debugURL["consumer"] = "http://" + caddr
	}
	if err := t.expose(ctx, local.Proxies(), db, addr); err != nil {
		return nil, fmt.Errorf("reference target: %w", err)
	}
	t.close = func(ctx context.Context) error {
		errs := []error{local.Proxies().RemoveProxy(ctx, t.svcProxy)}
		for _, p := range []*proc.Process{t.service, t.consumer} {
			if p != nil {
				errs = append(errs, p.Stop(ctx))
			}
		}
		// The database goes with the cluster; dropping it here would only
		// add time to every run.
		return errors.Join(errs...)
	}
	return t, nil
}

func startChild(ctx context.Context, local *env.Local, spec childSpec, ready proc.Ready) (*proc.Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	kv, err := childEnvValue(spec)
	if err != nil {
		return nil, err
	}
	return local.StartProcess(ctx, proc.Spec{Path: exe, Env: []string{kv}, Ready: ready,
		ReadyTimeout: 20 * time.Second, StopGrace: 2 * time.Second})
}

// startExternal wraps a user's service already behind the external env's proxy.
func startExternal(ext *env.External, tgt *scenarios.Target, dsn string, tokens map[string]string) *target {
	// The checked address, not the name: a name is not looked up again.
	return &target{clientURL: ext.ServiceURL(), serviceURL: ext.TargetURL(), svcProxy: env.ServiceProxy,
		dbProxy: dbProxyName(ext), dsn: dsn, tokens: tokens, debugURL: map[string]string{},
		close: func(context.Context) error { return nil }}
}

func dbProxyName(ext *env.External) string {
	if ext.DatabaseProxyAddr() == "" {
		return ""
	}
	return env.DatabaseProxy
}

// debugClient talks to failpoint and purge endpoints: loopback, short.
// No keep-alive: services come and go on reused ports, and a POST on a
// stale pooled connection to a dead one fails instead of reaching the new.
// They are the harness's own processes, so loopback only, whatever the
// command line allows.
var debugClient = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
	DialContext: addrgate.Loopback().For("a failpoint endpoint").DialContext}, Timeout: 10 * time.Second}

// moveOrigin returns u on to's origin when u is on from's origin (scheme,
// host and port, default ports made explicit).
func moveOrigin(u, from, to string) (string, bool) {
	pu, err1 := url.Parse(u)
	pf, err2 := url.Parse(from)
	pt, err3 := url.Parse(to)
	if err1 != nil || err2 != nil || err3 != nil || origin(pu) != origin(pf) || pt.Host == "" {
		return u, false
	}
	pu.Scheme, pu.Host = pt.Scheme, pt.Host
	return pu.String(), true
}

func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(netaddr.HostPort(u))
}
