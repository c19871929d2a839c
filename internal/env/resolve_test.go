package env_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/env"
)

// gateWith is a gate (without --allow-remote) reading an /etc/hosts of the
// test's making.
func gateWith(t *testing.T, lines ...string) *addrgate.Gate {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return addrgate.New(addrgate.Config{HostsFile: p})
}

// The external environment resolves its target and database names before
// sending anything, and then uses the checked address: the name is not
// looked up again (a second lookup could lead elsewhere).
func TestStartExternal_ResolvesNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := startService(t)
	_, port, _ := net.SplitHostPort(svc)
	off := gateWith(t, "10.1.2.3 localhost")
	_, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://localhost:" + port, Gate: off})
	if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "--target localhost:"+port+" resolves to 10.1.2.3") {
		t.Fatalf("localhost mapped off the machine: %v", err)
	}
	_, err = env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://" + svc, DatabaseAddr: "localhost:5432", Gate: off})
	if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "--db-addr localhost:5432") {
		t.Fatalf("database name mapped off the machine: %v", err)
	}
	mine := gateWith(t, "127.0.0.1 svc.test")
	e, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://svc.test.:" + port + "/base", Gate: mine})
	if err != nil {
		t.Fatalf("a name that resolves to loopback: %v", err)
	}
	defer e.Close(ctx)
	if e.TargetURL() != "http://127.0.0.1:"+port+"/base" {
		t.Fatalf("target %s; want the checked address", e.TargetURL())
	}
	if got := get(t, e.ServiceURL()); got != "hello /base" {
		t.Fatalf("through the proxy: %q", got)
	}
}

// A name that needs DNS is refused before the question is asked.
func TestStartExternal_NoDNSWithoutAllowRemote(t *testing.T) {
	t.Parallel()
	_, err := env.StartExternal(context.Background(), env.ExternalConfig{ServiceURL: "http://api.example.com:8080", Gate: gateWith(t)})
	var nl *addrgate.NotLoopbackError
	if !errors.As(err, &nl) || nl.Reason != addrgate.ReasonDNS {
		t.Fatalf("%v, want a refusal before DNS", err)
	}
}

// The database proxy listens on loopback by default, and on every
// interface only with --allow-remote (":6432" is every interface too).
func TestStartExternal_DatabaseListen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := startService(t)
	db := startService(t) // any listener stands in for the database
	for _, listen := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		_, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://" + svc, DatabaseAddr: db, DatabaseListen: listen})
		if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "--db-listen "+listen+" listens on every interface") {
			t.Errorf("%s: %v", listen, err)
		}
	}
	e, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://" + svc, DatabaseAddr: db})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	host, _, _ := net.SplitHostPort(e.DatabaseProxyAddr())
	if host != "127.0.0.1" {
		t.Fatalf("default database proxy on %s", e.DatabaseProxyAddr())
	}
	remote, err := env.StartExternal(ctx, env.ExternalConfig{ServiceURL: "http://" + svc, DatabaseAddr: db, DatabaseListen: ":0",
		Gate: addrgate.New(addrgate.Config{AllowRemote: true})})
	if err != nil {
		t.Fatalf("with --allow-remote: %v", err)
	}
	remote.Close(ctx)
}

// The Toxiproxy API is an address like any other.
func TestStartExternal_ToxiproxyMustBeLoopback(t *testing.T) {
	t.Parallel()
	svc := startService(t)
	for _, u := range []string{"http://203.0.113.9:8474", "http://toxiproxy.example:8474"} {
		_, err := env.StartExternal(context.Background(), env.ExternalConfig{ServiceURL: "http://" + svc, ToxiproxyURL: u})
		if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "--toxiproxy") {
			t.Errorf("%s: %v", u, err)
		}
	}
}
