package driver_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/internal/proxy"
)

// Behind the harness's proxy a service that refuses connections is, to the
// driver, a connection that was taken and closed before a byte came back:
// only with Config.Upstream does the attempt say no connection was made to
// the service (the words eventually-decided reads as capacity).
func TestRun_UpstreamRefusedBehindTheProxy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	px := proxy.NewInProcess()
	t.Cleanup(func() { _ = px.Close(ctx) })
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := dead.Addr().String()
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}
	listen, err := px.CreateProxy(ctx, "svc", "", upstream)
	if err != nil {
		t.Fatal(err)
	}
	for _, told := range []bool{false, true} {
		cfg := driver.Config{BaseURL: "http://" + listen, Retry: driver.RetryPolicy{MaxAttempts: 2, Base: 1, Max: 1}}
		if told {
			cfg.Upstream = px.(proxy.UpstreamReporter).Upstream
		}
		h, _ := run(t, cfg, intents(3, "t1"))
		if len(h.Attempts) == 0 {
			t.Fatal("no attempts")
		}
		for _, a := range h.Attempts {
			got := strings.Contains(a.Error, "no connection was made") && strings.Contains(a.Error, "connection refused")
			if got != told {
				t.Errorf("Upstream set %t: attempt error %q", told, a.Error)
			}
		}
	}
}
