package addrgate_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// countingDNS answers every name with addrs and counts the questions: the
// gate must not ask it at all without --allow-remote.
type countingDNS struct {
	addrs []string
	asked atomic.Int64
}

func (c *countingDNS) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	c.asked.Add(1)
	if c.addrs == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, a := range c.addrs {
		out = append(out, net.IPAddr{IP: net.ParseIP(a)})
	}
	return out, nil
}

// hostsFile writes an /etc/hosts of the test's making.
func hostsFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func strs(aps []netip.AddrPort) []string {
	out := make([]string, len(aps))
	for i, ap := range aps {
		out[i] = ap.String()
	}
	return out
}

// The rules on literals and names, without --allow-remote, and that not
// one of them asks DNS.
func TestGate_Resolve(t *testing.T) {
	t.Parallel()
	dns := &countingDNS{addrs: []string{"127.0.0.1"}} // would pass, if it were asked
	g := addrgate.New(addrgate.Config{Resolver: dns, HostsFile: hostsFile(t,
		"# a comment line",
		"127.0.0.1   svc.test  Alias.Test # trailing comment",
		"::1         svc.test",
		"10.1.2.3    away.test",
		"127.0.0.1   half.test",
		"192.168.1.9 half.test",
		"127.0.0.1   dotted.test.",
		"not-an-ip   broken.test",
	)})
	for _, c := range []struct {
		addr   string
		want   []string // nil: refused
		reason string
		msg    string
	}{
		{addr: "127.0.0.1:8080", want: []string{"127.0.0.1:8080"}},
		{addr: "127.9.9.9:1", want: []string{"127.9.9.9:1"}},
		{addr: "[::1]:80", want: []string{"[::1]:80"}},
		{addr: "[::ffff:127.0.0.1]:80", want: []string{"127.0.0.1:80"}},
		{addr: "[::ffff:10.0.0.1]:80", reason: addrgate.ReasonAddress, msg: "[::ffff:10.0.0.1]:80 is not a loopback address"},
		{addr: "10.0.0.5:8080", reason: addrgate.ReasonAddress, msg: "--x 10.0.0.5:8080 is not a loopback address; pass --allow-remote to send traffic there"},
		{addr: "[2001:db8::1]:80", reason: addrgate.ReasonAddress},
		{addr: "[fe80::1%lo]:80", reason: addrgate.ReasonAddress},
		{addr: "0.0.0.0:80", reason: addrgate.ReasonEveryInterface, msg: "stands for every interface"},
		{addr: "[::]:80", reason: addrgate.ReasonEveryInterface},
		{addr: ":80", reason: addrgate.ReasonEveryInterface},
		// Loopback names: the hosts file has none here, so RFC 6761's.
		{addr: "localhost:5432", want: []string{"127.0.0.1:5432", "[::1]:5432"}},
		{addr: "localhost.:5432", want: []string{"127.0.0.1:5432", "[::1]:5432"}},
		{addr: "LocalHost:1", want: []string{"127.0.0.1:1", "[::1]:1"}},
		{addr: "api.localhost:1", want: []string{"127.0.0.1:1", "[::1]:1"}},
		{addr: "api.localhost.:1", want: []string{"127.0.0.1:1", "[::1]:1"}},
		// The hosts file, every address of a name, a trailing dot either side.
		{addr: "svc.test:80", want: []string{"127.0.0.1:80", "[::1]:80"}},
		{addr: "SVC.test.:80", want: []string{"127.0.0.1:80", "[::1]:80"}},
		{addr: "alias.test:80", want: []string{"127.0.0.1:80"}},
		{addr: "dotted.test:80", want: []string{"127.0.0.1:80"}},
		{addr: "away.test:80", reason: addrgate.ReasonAddress, msg: "away.test:80 resolves to 10.1.2.3, which is not a loopback address"},
		{addr: "half.test:80", reason: addrgate.ReasonAddress, msg: "resolves to 192.168.1.9"},
		// Names that need DNS: refused, DNS never asked.
		{addr: "example.com:443", reason: addrgate.ReasonDNS, msg: `"example.com" is not in`},
		{addr: "localhost.example.com:80", reason: addrgate.ReasonDNS},
		{addr: ".localhost:80", reason: addrgate.ReasonDNS},
		{addr: "broken.test:80", reason: addrgate.ReasonDNS},
		{addr: "127.1:80", reason: addrgate.ReasonDNS},      // inet_aton's shorthand is a name here
		{addr: "0x7f000001:80", reason: addrgate.ReasonDNS}, // and so is hex
	} {
		got, err := g.Resolve(context.Background(), c.addr, "--x")
		if c.want != nil {
			if err != nil || !slices.Equal(strs(got), c.want) {
				t.Errorf("%s: %v, %v; want %v", c.addr, strs(got), err, c.want)
			}
			continue
		}
		var nl *addrgate.NotLoopbackError
		if !errors.As(err, &nl) || nl.Reason != c.reason || !errors.Is(err, addrgate.ErrNotLoopback) {
			t.Errorf("%s: %v (%T), want a refusal for %s", c.addr, err, err, c.reason)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %q, want it to contain %q", c.addr, err, c.msg)
		}
	}
	if n := dns.asked.Load(); n != 0 {
		t.Fatalf("DNS asked %d times without --allow-remote", n)
	}
}

// A hosts file that maps localhost off the machine is believed, and
// refused: the name is trusted for where it leads, not what it says.
func TestGate_LocalhostMappedAway(t *testing.T) {
	t.Parallel()
	g := addrgate.New(addrgate.Config{HostsFile: hostsFile(t, "10.1.2.3 localhost")})
	_, err := g.Resolve(context.Background(), "localhost.:8080", "--target")
	if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "--target localhost.:8080 resolves to 10.1.2.3") {
		t.Fatalf("%v", err)
	}
}

// With --allow-remote everything passes, and a name the hosts file does
// not know is asked of DNS once; loopback names and hosts entries never.
func TestGate_AllowRemote(t *testing.T) {
	t.Parallel()
	dns := &countingDNS{addrs: []string{"203.0.113.7", "::ffff:203.0.113.8"}}
	g := addrgate.New(addrgate.Config{AllowRemote: true, Resolver: dns, HostsFile: hostsFile(t, "10.1.2.3 away.test")})
	ctx := context.Background()
	for addr, want := range map[string][]string{
		"10.0.0.5:80":         {"10.0.0.5:80"},
		"0.0.0.0:80":          {"0.0.0.0:80"},
		"away.test:1":         {"10.1.2.3:1"},
		"localhost:1":         {"127.0.0.1:1", "[::1]:1"},
		"api.example.com:443": {"203.0.113.7:443", "203.0.113.8:443"},
	} {
		for range 2 { // the second time from what the first found
			got, err := g.Resolve(ctx, addr, "--target")
			if err != nil || !slices.Equal(strs(got), want) {
				t.Errorf("%s: %v, %v; want %v", addr, strs(got), err, want)
			}
		}
	}
	if n := dns.asked.Load(); n != 1 {
		t.Fatalf("DNS asked %d times, want once (api.example.com, resolved once)", n)
	}
	if !g.AllowRemote() || addrgate.Loopback().AllowRemote() {
		t.Fatal("AllowRemote")
	}
}

// Dial connects to the checked address: the name goes through the hosts
// file once and the connection is made to its address.
func TestGate_DialsTheCheckedAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dns := &countingDNS{addrs: []string{"10.9.9.9"}}
	g := addrgate.New(addrgate.Config{Resolver: dns, HostsFile: hostsFile(t, "127.0.0.1 svc.test")})
	c, err := g.For("--target").DialContext(context.Background(), "tcp", "svc.test:"+port)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RemoteAddr().String(); got != "127.0.0.1:"+port {
		t.Fatalf("connected to %s", got)
	}
	c.Close()
	if _, err := g.Dial(context.Background(), "tcp", "10.0.0.1:"+port, "--target"); !errors.Is(err, addrgate.ErrNotLoopback) {
		t.Fatalf("dial off the machine: %v", err)
	}
	if _, err := g.Dial(context.Background(), "udp", "127.0.0.1:53", "--target"); err == nil {
		t.Fatal("udp dialled")
	}
	ips, err := g.For("effects.dsn").LookupHost(context.Background(), "svc.test.")
	if err != nil || !slices.Equal(ips, []string{"127.0.0.1"}) {
		t.Fatalf("LookupHost: %v %v", ips, err)
	}
	if _, err := g.For("effects.dsn").LookupHost(context.Background(), "db.example.com"); !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "effects.dsn db.example.com") {
		t.Fatalf("LookupHost of a DNS name: %v", err)
	}
	if dns.asked.Load() != 0 {
		t.Fatal("DNS asked")
	}
}

// Unix sockets are on this machine by nature.
func TestGate_DialsUnixSockets(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := addrgate.Loopback().Dial(context.Background(), "unix", path, "effects.dsn")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// A listener binds to loopback by default; every interface and a
// non-loopback address need --allow-remote.
func TestGate_ListenAddr(t *testing.T) {
	t.Parallel()
	g := addrgate.New(addrgate.Config{HostsFile: hostsFile(t)})
	ctx := context.Background()
	for addr, want := range map[string]string{
		"":                "127.0.0.1:0",
		"127.0.0.1:6432":  "127.0.0.1:6432",
		"[::1]:6432":      "[::1]:6432",
		"localhost:6432":  "127.0.0.1:6432",
		"localhost.:6432": "127.0.0.1:6432",
		":6432":           "",
		"0.0.0.0:6432":    "",
		"[::]:6432":       "",
		"192.168.1.5:80":  "",
		"example.com:80":  "",
	} {
		got, err := g.ListenAddr(ctx, addr, "--db-listen")
		if want == "" {
			var nl *addrgate.NotLoopbackError
			if !errors.As(err, &nl) || !nl.Listen {
				t.Errorf("%q: %q, %v; want a refusal", addr, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", addr, got, err, want)
		}
	}
	_, err := g.ListenAddr(ctx, ":6432", "--db-listen")
	if err == nil || err.Error() != "--db-listen :6432 listens on every interface; give a loopback address (127.0.0.1:PORT), or pass --allow-remote to accept connections from other machines" {
		t.Fatalf("message: %v", err)
	}
	remote := addrgate.New(addrgate.Config{AllowRemote: true})
	for _, addr := range []string{":6432", "0.0.0.0:6432", "[::]:6432"} {
		if got, err := remote.ListenAddr(ctx, addr, "--db-listen"); err != nil || got != addr {
			t.Errorf("allowed %q: %q %v", addr, got, err)
		}
	}
	ln, err := g.Listen(ctx, "", "--listen")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		t.Fatalf("default listener on %s", ln.Addr())
	}
}

// Every redirect hop goes through the gate: a 302 to another machine is
// refused before it is followed; one to another loopback port is followed.
func TestGate_HTTPClientRedirects(t *testing.T) {
	t.Parallel()
	final := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("here")) }))
	defer final.Close()
	var hops atomic.Int64
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://192.0.2.1:9/effects", http.StatusFound)
			return
		}
		http.Redirect(w, r, final.URL+"/x", http.StatusFound)
	}))
	defer redir.Close()
	c := addrgate.Loopback().HTTPClient("effects.url", 0)
	_, err := c.Get(redir.URL + "/away")
	if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "effects.url (redirected to http://192.0.2.1:9/effects) 192.0.2.1:9 is not a loopback address") {
		t.Fatalf("redirect off the machine: %v", err)
	}
	resp, err := c.Get(redir.URL + "/near")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("redirect on loopback: %v", err)
	}
	resp.Body.Close()
	if hops.Load() != 2 {
		t.Fatalf("%d hops", hops.Load())
	}
	if _, err := c.Get("http://192.0.2.1:9/"); !errors.Is(err, addrgate.ErrNotLoopback) {
		t.Fatalf("first hop off the machine: %v", err)
	}
}

func TestGate_PinURL(t *testing.T) {
	t.Parallel()
	g := addrgate.New(addrgate.Config{HostsFile: hostsFile(t, "127.0.0.2 tox.test")})
	u, err := g.PinURL(context.Background(), "http://tox.test:8474/base", "--toxiproxy")
	if err != nil || u.String() != "http://127.0.0.2:8474/base" {
		t.Fatalf("%v %v", u, err)
	}
	for _, raw := range []string{"http://203.0.113.9:8474", "http://toxiproxy.example:8474"} {
		if _, err := g.PinURL(context.Background(), raw, "--toxiproxy"); !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "--toxiproxy") {
			t.Errorf("%s: %v", raw, err)
		}
	}
	if _, err := g.PinURL(context.Background(), "127.0.0.1:8474", "--toxiproxy"); err == nil {
		t.Fatal("a URL without a scheme pinned")
	}
}

func TestLoopbackName(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.255.0.9": true, "::1": true, "[::1]": true, "::ffff:127.0.0.1": true,
		"localhost": true, "localhost.": true, "LOCALHOST": true, "a.b.localhost": true, "x.localhost.": true,
		"0.0.0.0": false, "::": false, "": false, ".localhost": false, "localhost.com": false,
		"10.0.0.1": false, "::ffff:10.0.0.1": false, "example.com": false, "localhostx": false,
	} {
		if got := addrgate.LoopbackName(host); got != want {
			t.Errorf("LoopbackName(%q) = %v", host, got)
		}
	}
}
