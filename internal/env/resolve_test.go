package env_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemchaos/idemchaos/internal/env"
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

// A name is trusted for where it resolves, every address of it: localhost
// mapped off the machine is refused, naming the setting and the address.
func TestResolveLoopback(t *testing.T) {
	t.Parallel()
	r := &hosts{m: map[string][]string{
		"localhost": {"10.1.2.3"},
		"both":      {"127.0.0.1", "::1"},
		"half":      {"127.0.0.1", "192.168.1.9"},
	}}
	ctx := context.Background()
	for _, c := range []struct {
		addr, setting string
		want          []string // nil: refused
		msg           string
	}{
		{"localhost:8080", "--target", nil, "--target localhost:8080 resolves to 10.1.2.3, which is not a loopback address"},
		{"half:5432", "--db-addr", nil, "--db-addr half:5432 resolves to 192.168.1.9"},
		{"both:80", "effects.url", []string{"127.0.0.1:80", "[::1]:80"}, ""},
		{"127.0.0.2:1", "--target", []string{"127.0.0.2:1"}, ""},
		{"[::1]:9", "--target", []string{"[::1]:9"}, ""},
		{"10.0.0.5:80", "--target", nil, "--target 10.0.0.5:80 is not a loopback address"},
		{"nowhere:80", "--target", nil, `--target nowhere:80: cannot resolve "nowhere"`},
	} {
		got, err := env.ResolveLoopback(ctx, r, c.addr, c.setting)
		if c.want != nil {
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, %v; want %v", c.addr, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want an error containing %q", c.addr, err, c.msg)
		}
		if strings.Contains(c.msg, "loopback") && !errors.Is(err, env.ErrNotLoopback) {
			t.Errorf("%s: %v is not ErrNotLoopback", c.addr, err)
		}
	}
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
	if !errors.Is(err, env.ErrNotLoopback) || !strings.Contains(err.Error(), "--target localhost:"+port+" resolves to 10.1.2.3") {
		t.Fatalf("localhost mapped off the machine: %v", err)
	}
	_, err = env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://" + svc, DatabaseAddr: "localhost:5432", Resolver: off})
	if !errors.Is(err, env.ErrNotLoopback) || !strings.Contains(err.Error(), "--db-addr localhost:5432") {
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
