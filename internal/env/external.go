package env

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/internal/proxy"
)

// ExternalConfig configures [StartExternal].
type ExternalConfig struct {
	// ServiceURL is the user's service, e.g. http://127.0.0.1:8080.
	ServiceURL string
	// DSN, if set, is where the SQL effect oracle reads the service's
	// effects. It is used directly, never through a fault proxy.
	DSN string
	// DatabaseAddr, if set, is the host:port of the service's database; the
	// harness then runs a "db" proxy to it, and the user points the
	// service at [External.DatabaseProxyAddr] so that DB faults can be
	// applied.
	DatabaseAddr string
	// DatabaseListen is where the database proxy listens; empty means
	// 127.0.0.1 on a free port. A fixed port lets the service's
	// configuration name it in advance; every interface needs the gate's
	// --allow-remote.
	DatabaseListen string
	// Gate checks the service, the database address and the listen address
	// (nil: loopback only); see [addrgate].
	Gate *addrgate.Gate
	// ToxiproxyURL, if set, drives that toxiproxy-server instead of an
	// in-process one: its host is checked by the gate, and the API is
	// reached at the address checked.
	ToxiproxyURL string
	// DialTimeout bounds the reachability check. Zero means 5s.
	DialTimeout time.Duration

	_ struct{}
}

// Proxy names in an external environment.
const (
	// ServiceProxy is the proxy in front of the user's service.
	ServiceProxy = "service"
	// DatabaseProxy is the proxy between the service and its database.
	DatabaseProxy = "db"
)

// External is a user's running service with the harness's proxies in front
// of it (and, if configured, behind it).
type External struct {
	target     *url.URL
	serviceURL string
	dbAddr     string
	dsn        string
	proxies    proxy.Server
}

// StartExternal checks the targets (loopback unless allowed, reachable
// within the dial timeout) and starts the proxies.
func StartExternal(ctx context.Context, cfg ExternalConfig) (*External, error) {
	if cfg.ServiceURL == "" {
		return nil, errors.New("external env: a service URL is required")
	}
	target, err := url.Parse(cfg.ServiceURL)
	if err != nil || target.Host == "" || (target.Scheme != "http" && target.Scheme != "https") {
		return nil, fmt.Errorf("external env: service URL %q: want http(s)://host:port", cfg.ServiceURL)
	}
	// Refuse before sending a single packet anywhere, and from then on
	// connect to the addresses checked, never to the name again.
	svcAddrs, err := checked(ctx, cfg.Gate, netaddr.HostPort(target), "--target")
	if err != nil {
		return nil, fmt.Errorf("external env: %w", err)
	}
	var dbAddrs []string
	dbListen := ""
	if cfg.DatabaseAddr != "" {
		if dbAddrs, err = checked(ctx, cfg.Gate, cfg.DatabaseAddr, "--db-addr"); err != nil {
			return nil, fmt.Errorf("external env: %w", err)
		}
	}
	if cfg.DatabaseListen != "" {
		if dbListen, err = cfg.Gate.ListenAddr(ctx, cfg.DatabaseListen, "--db-listen"); err != nil {
			return nil, fmt.Errorf("external env: %w", err)
		}
	}
	toxiproxyURL := ""
	if cfg.ToxiproxyURL != "" {
		u, err := cfg.Gate.PinURL(ctx, cfg.ToxiproxyURL, "--toxiproxy")
		if err != nil {
			return nil, fmt.Errorf("external env: %w", err)
		}
		toxiproxyURL = u.String()
	}
	serviceAddr, err := reachable(ctx, cfg, netaddr.HostPort(target), svcAddrs)
	if err != nil {
		return nil, fmt.Errorf("external env: %w", err)
	}
	if target.Scheme == "https" {
		if err := speaksTLS(ctx, serviceAddr, target.Hostname(), cfg.DialTimeout); err != nil {
			return nil, fmt.Errorf("external env: %w", err)
		}
	}
	dbAddr := ""
	if cfg.DatabaseAddr != "" {
		if dbAddr, err = reachable(ctx, cfg, cfg.DatabaseAddr, dbAddrs); err != nil {
			return nil, fmt.Errorf("external env: %w", err)
		}
	}
	pinned := *target
	pinned.Host = serviceAddr
	e := &External{target: &pinned, dsn: cfg.DSN}
	if toxiproxyURL != "" {
		if e.proxies, err = proxy.Connect(ctx, toxiproxyURL); err != nil {
			return nil, fmt.Errorf("external env: %w", err)
		}
	} else {
		e.proxies = proxy.NewInProcess()
	}
	listen, err := e.proxies.CreateProxy(ctx, ServiceProxy, "", serviceAddr)
	if err != nil {
		_ = e.proxies.Close(context.Background())
		return nil, fmt.Errorf("external env: %w", err)
	}
	proxied := pinned
	proxied.Host = listen
	e.serviceURL = proxied.String()
	if cfg.DatabaseAddr != "" {
		if e.dbAddr, err = e.proxies.CreateProxy(ctx, DatabaseProxy, dbListen, dbAddr); err != nil {
			_ = e.proxies.Close(context.Background())
			return nil, fmt.Errorf("external env: %w", err)
		}
	}
	return e, nil
}

// checked resolves addr once through the gate (refusing what it refuses)
// and returns the addresses to connect to.
func checked(ctx context.Context, g *addrgate.Gate, addr, setting string) ([]string, error) {
	aps, err := g.Resolve(ctx, addr, setting)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(aps))
	for i, ap := range aps {
		out[i] = ap.String()
	}
	return out, nil
}

// reachable returns the first of addr's checked addresses that accepts a
// connection.
func reachable(ctx context.Context, cfg ExternalConfig, addr string, addrs []string) (string, error) {
	var first error
	for _, a := range addrs {
		err := CheckReachable(ctx, a, cfg.DialTimeout)
		if err == nil {
			return a, nil
		}
		if first == nil {
			first = err
		}
	}
	var ur *UnreachableError
	if errors.As(first, &ur) {
		ur.Addr = addr
	}
	return "", first
}

// CheckReachable dials addr over TCP with a deadline (timeout, or 5s if
// zero) and returns an [*UnreachableError] if no connection is made.
func CheckReachable(ctx context.Context, addr string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return &UnreachableError{Addr: addr, Err: err}
	}
	return conn.Close()
}

// speaksTLS refuses an https:// target that answers a TLS handshake in
// plain HTTP: every attempt of the run would fail the same way, and a run
// of retries is no way to say "use http://". Only the protocol is probed:
// the certificate is the driver's business, so it is not verified here. A
// server that answers nothing within the bound is left to the run.
func speaksTLS(ctx context.Context, addr, name string, timeout time.Duration) error {
	if timeout <= 0 || timeout > 2*time.Second {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return &UnreachableError{Addr: addr, Err: err}
	}
	c := tls.Client(conn, &tls.Config{ServerName: name, InsecureSkipVerify: true}) //nolint:gosec // a protocol probe, not a trust decision
	defer c.Close()
	var plain tls.RecordHeaderError
	if err := c.HandshakeContext(ctx); errors.As(err, &plain) {
		return fmt.Errorf("target %s speaks plain HTTP, not TLS, to the https:// URL: use http://", addr)
	}
	return nil
}

// Proxies is the Toxiproxy in front of the service (and its database).
func (e *External) Proxies() proxy.Server { return e.proxies }

// TargetURL is the service's own URL, without the proxy, its host the
// checked address the name resolved to.
func (e *External) TargetURL() string { return e.target.String() }

// ServiceURL is the service's URL through the harness's proxy: send traffic
// here.
func (e *External) ServiceURL() string { return e.serviceURL }

// DatabaseProxyAddr is the database proxy's listen address, or "" if none
// was configured.
func (e *External) DatabaseProxyAddr() string { return e.dbAddr }

// DSN is the effect oracle's DSN, or "".
func (e *External) DSN() string { return e.dsn }

// Close removes the proxies.
func (e *External) Close(ctx context.Context) error {
	return e.proxies.Close(ctx)
}
