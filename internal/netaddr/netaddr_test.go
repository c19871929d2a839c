package netaddr_test

import (
	"net/url"
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
