package oracle

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// pgEndpoints lists every host a connection with dsn may try: the first
// and each fallback (pgconn falls back to the next host, and to the same
// host without TLS, when one fails).
func pgEndpoints(dsn string) ([]addrgate.Endpoint, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	return endpointsOf(cfg), nil
}

func endpointsOf(cfg *pgconn.Config) []addrgate.Endpoint {
	var out []addrgate.Endpoint
	seen := map[addrgate.Endpoint]bool{}
	add := func(host string, port uint16) {
		ep := addrgate.Endpoint{Network: "tcp", Addr: net.JoinHostPort(host, strconv.Itoa(int(port)))}
		if strings.HasPrefix(host, "/") {
			ep = addrgate.Endpoint{Network: "unix", Addr: host}
		}
		if !seen[ep] {
			seen[ep] = true
			out = append(out, ep)
		}
	}
	add(cfg.Host, cfg.Port)
	for _, fb := range cfg.Fallbacks {
		add(fb.Host, fb.Port)
	}
	return out
}

// connConfig is dsn's configuration with its connections through n: every
// host the DSN names is looked up through n before the first is tried (a
// later host is tried when an earlier one fails, so each must pass), each
// once, and pgconn then dials the addresses n returned.
func connConfig(ctx context.Context, n Net, dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	looked := map[string][]string{}
	lookup := func(ctx context.Context, host string) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		if addrs, ok := looked[host]; ok {
			return addrs, nil
		}
		addrs, err := n.LookupHost(ctx, host)
		if err != nil {
			return nil, err
		}
		looked[host] = addrs
		return addrs, nil
	}
	for _, ep := range endpointsOf(&cfg.Config) {
		if ep.Network != "tcp" {
			continue
		}
		host, _, _ := net.SplitHostPort(ep.Addr)
		if _, err := lookup(ctx, host); err != nil {
			return nil, err
		}
	}
	cfg.LookupFunc = lookup
	cfg.DialFunc = n.DialContext
	return cfg, nil
}
