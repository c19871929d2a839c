package env_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/internal/netaddr"
)

// hosts is an injected resolver: an /etc/hosts of the test's making.
type hosts struct {
	m       map[string][]string
	lookups atomic.Int64
}

func (h *hosts) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	h.lookups.Add(1)
	ips, ok := h.m[strings.ToLower(host)]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, s := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

// The external environment resolves its target and database names before
// sending anything, and then uses the checked address: the name is not
// looked up again (a second lookup could lead elsewhere).
func TestStartExternal_ResolvesNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := startService(t)
	_, port, _ := net.SplitHostPort(svc)
	off := &hosts{m: map[string][]string{"localhost": {"10.1.2.3"}}}
	_, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://localhost:" + port, Resolver: off})
	if !errors.Is(err, netaddr.ErrNotLoopback) || !strings.Contains(err.Error(), "--target localhost:"+port+" resolves to 10.1.2.3") {
		t.Fatalf("localhost mapped off the machine: %v", err)
	}
	_, err = env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://" + svc, DatabaseAddr: "localhost:5432", Resolver: off})
	if !errors.Is(err, netaddr.ErrNotLoopback) || !strings.Contains(err.Error(), "--db-addr localhost:5432") {
		t.Fatalf("database name mapped off the machine: %v", err)
	}
	mine := &hosts{m: map[string][]string{"svc.test": {"127.0.0.1"}}}
	e, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://svc.test:" + port + "/base", Resolver: mine})
	if err != nil {
		t.Fatalf("a name that resolves to loopback: %v", err)
	}
	defer e.Close(ctx)
	if e.TargetURL() != "http://127.0.0.1:"+port+"/base" || mine.lookups.Load() != 1 {
		t.Fatalf("target %s after %d lookups; want the checked address after one", e.TargetURL(), mine.lookups.Load())
	}
	if got := get(t, e.ServiceURL()); got != "hello /base" {
		t.Fatalf("through the proxy: %q", got)
	}
}
