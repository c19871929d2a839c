package netaddr_test

import (
	"net"
	"net/url"
	"strconv"
	"testing"

	"github.com/idemchaos/idemchaos/internal/netaddr"
)

func TestHostPort(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"http://127.0.0.1:8080/x": "127.0.0.1:8080",
		"http://localhost/x":      "localhost:80",
		"https://localhost":       "localhost:443",
		"HTTPS://localhost":       "localhost:443",
		"https://[::1]/v1":        "[::1]:443",
		"http://[::1]:9/":         "[::1]:9",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := netaddr.HostPort(u); got != want {
			t.Errorf("HostPort(%s) = %s, want %s", raw, got, want)
		}
	}
}

// The port is a real loopback port nobody holds: a server can listen on it.
func TestFreePort(t *testing.T) {
	t.Parallel()
	port, err := netaddr.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if port <= 0 || port > 65535 {
		t.Fatalf("port %d", port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listen on the free port: %v", err)
	}
	_ = ln.Close()
}
