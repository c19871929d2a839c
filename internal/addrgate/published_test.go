package addrgate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// The bindings a docker daemon may report for a published port: only
// loopback ones are connected to. (The docker environment's daemon lives
// outside any network namespace a test could make, so its path is held
// here, on the addresses it publishes.)
func TestPublished(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ip, port, want string // want "": refused
	}{
		{"127.0.0.1", "32768", "127.0.0.1:32768"},
		{"::1", "32768", "[::1]:32768"},
		{"::ffff:127.0.0.1", "1", "127.0.0.1:1"},
		{"0.0.0.0", "32768", ""}, // the daemon's default without a HostIP
		{"::", "32768", ""},      // its IPv6 twin
		{"", "32768", ""},
		{"192.168.1.2", "80", ""},
		{"localhost", "80", ""}, // the daemon reports addresses, never names
		{"127.0.0.1", "http", ""},
	} {
		got, err := addrgate.Published(c.ip, c.port)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q %q: %q, want a refusal", c.ip, c.port, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q %q: %q %v, want %q", c.ip, c.port, got, err, c.want)
		}
	}
	_, err := addrgate.Published("0.0.0.0", "5432")
	if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "docker published port 0.0.0.0:5432 listens on every interface") || strings.Contains(err.Error(), "--allow-remote") {
		t.Fatalf("message: %v", err)
	}
	if addrgate.PublishIP != "127.0.0.1" {
		t.Fatal(addrgate.PublishIP)
	}
	// What the environment asks for is what the gate accepts back.
	if _, err := addrgate.Published(addrgate.PublishIP, "1"); err != nil {
		t.Fatal(err)
	}
}

func TestDockerHost(t *testing.T) {
	t.Parallel()
	for v, ok := range map[string]bool{
		"": true, "unix:///var/run/docker.sock": true, "tcp://127.0.0.1:2375": true, "tcp://localhost:2375": true,
		"tcp://[::1]:2375": true, "tcp://10.0.0.2:2376": false, "tcp://docker.example:2376": false, "ssh://me@host": false,
	} {
		if err := addrgate.DockerHost(v); (err == nil) != ok {
			t.Errorf("DockerHost(%q) = %v", v, err)
		}
	}
}

// A DSN is checked host by host, by the form that claims it; a form is
// found by its scheme, and key=value strings by the keyword form.
func TestCheckDSN(t *testing.T) {
	t.Parallel()
	addrgate.RegisterDSN(addrgate.DSNForm{Name: "testdb", Schemes: []string{"testdb"}, Endpoints: func(dsn string) ([]addrgate.Endpoint, error) {
		var out []addrgate.Endpoint
		_, rest, _ := strings.Cut(dsn, "://")
		for _, h := range strings.Split(rest, ",") {
			if strings.HasPrefix(h, "/") {
				out = append(out, addrgate.Endpoint{Network: "unix", Addr: h})
				continue
			}
			out = append(out, addrgate.Endpoint{Network: "tcp", Addr: h})
		}
		return out, nil
	}})
	g := addrgate.Loopback()
	ctx := context.Background()
	for dsn, ok := range map[string]bool{
		"testdb://127.0.0.1:1":            true,
		"testdb:///run/db.sock":           true,
		"TESTDB://127.0.0.1:1,[::1]:2":    true,
		"testdb://127.0.0.1:1,10.0.0.1:2": false,
		"testdb://localhost.:1,db.test:2": false,
		"nosuchdb://127.0.0.1:1":          false,
	} {
		err := g.CheckDSN(ctx, dsn, "effects.dsn")
		if (err == nil) != ok {
			t.Errorf("%s: %v", dsn, err)
		}
	}
	if err := g.CheckDSN(ctx, "nosuchdb://x", "effects.dsn"); err == nil || !strings.Contains(err.Error(), `effects.dsn: scheme "nosuchdb" is not one idemchaos reads (`) || !strings.Contains(err.Error(), "testdb:") {
		t.Fatalf("unknown scheme: %v", err)
	}
	remote := addrgate.New(addrgate.Config{AllowRemote: true, Resolver: &countingDNS{}})
	if err := remote.CheckDSN(ctx, "testdb://db.example.com:5432", "effects.dsn"); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a scheme registered twice did not panic")
		}
	}()
	addrgate.RegisterDSN(addrgate.DSNForm{Name: "again", Schemes: []string{"testdb"}})
}
