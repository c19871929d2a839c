package netaddr_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

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
		got, err := netaddr.ResolveLoopback(ctx, r, c.addr, c.setting)
		if c.want != nil {
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, %v; want %v", c.addr, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want an error containing %q", c.addr, err, c.msg)
		}
		if strings.Contains(c.msg, "loopback") && !errors.Is(err, netaddr.ErrNotLoopback) {
			t.Errorf("%s: %v is not ErrNotLoopback", c.addr, err)
		}
	}
}

func TestCheckLoopback_Addresses(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "127.9.9.9:1": true, "[::1]:80": true, "localhost:5432": false, "LOCALHOST:1": false,
		"10.0.0.5:8080": false, "[2001:db8::1]:80": false, "example.com:80": false, "0.0.0.0:80": false,
	} {
		err := netaddr.CheckLoopback(addr)
		if ok != (err == nil) {
			t.Errorf("CheckLoopback(%s) = %v, want ok=%t", addr, err, ok)
		}
		if !ok && !errors.Is(err, netaddr.ErrNotLoopback) {
			t.Errorf("CheckLoopback(%s) = %v, not ErrNotLoopback", addr, err)
		}
	}
}
