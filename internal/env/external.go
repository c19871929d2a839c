package env

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

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
	// configuration name it in advance.
	DatabaseListen string
	// AllowRemote permits non-loopback targets.
	AllowRemote bool
	// ToxiproxyURL, if set, drives that toxiproxy-server instead of an
	// in-process one.
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
	serviceAddr := hostPort(target)
	addrs := []string{serviceAddr}
	if cfg.DatabaseAddr != "" {
		addrs = append(addrs, cfg.DatabaseAddr)
	}
	// Refuse before sending a single packet anywhere.
	if !cfg.AllowRemote {
		for _, a := range addrs {
			if err := CheckLoopback(a); err != nil {
				return nil, fmt.Errorf("external env: %w", err)
			}
		}
	}
	for _, a := range addrs {
		if err := CheckReachable(ctx, a, cfg.DialTimeout); err != nil {
			return nil, fmt.Errorf("external env: %w", err)
		}
	}
	e := &External{target: target, dsn: cfg.DSN}
	if cfg.ToxiproxyURL != "" {
		if e.proxies, err = proxy.Connect(ctx, cfg.ToxiproxyURL); err != nil {
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
	proxied := *target
	proxied.Host = listen
	e.serviceURL = proxied.String()
	if cfg.DatabaseAddr != "" {
		if e.dbAddr, err = e.proxies.CreateProxy(ctx, DatabaseProxy, cfg.DatabaseListen, cfg.DatabaseAddr); err != nil {
			_ = e.proxies.Close(context.Background())
			return nil, fmt.Errorf("external env: %w", err)
		}
	}
	return e, nil
}

// hostPort is the URL's host:port with the scheme's default port filled in.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// CheckLoopback returns a [*NotLoopbackError] unless addr's host is
// "localhost" or a loopback IP (127.0.0.0/8, ::1). Other names are refused
// rather than resolved: what a name resolves to can change under us.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &NotLoopbackError{Addr: addr}
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

// Kind implements [Env].
func (e *External) Kind() Kind { return KindExternal }

// Proxies implements [Env].
func (e *External) Proxies() proxy.Server { return e.proxies }

// TargetURL is the service's own URL, without the proxy.
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
