package harness_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/scenarios"
)

// offTheMachine maps every name to an address that is not loopback: an
// /etc/hosts gone wrong.
type offTheMachine struct{}

func (offTheMachine) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.ParseIP("10.9.8.7")}}, nil
}

// The http oracle is sent requests too: its host must resolve to loopback
// only, like the target's, and the refusal names effects.url.
func TestOpen_HTTPOracleMustBeLoopback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	for name, c := range map[string]struct {
		url      string
		resolver harness.Resolver
		want     string
	}{
		"a remote address":        {"http://10.0.0.9/effects", nil, "effects.url 10.0.0.9:80 is not a loopback address"},
		"localhost mapped away":   {"http://localhost:9000/effects", offTheMachine{}, "effects.url localhost:9000 resolves to 10.9.8.7"},
		"a name mapped away, TLS": {"https://effects.test/x", offTheMachine{}, "effects.url effects.test:443 resolves to 10.9.8.7"},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scenarios.Scenario{Name: "oracle", Target: scenarios.Target{URL: srv.URL},
				Effects: scenarios.Effects{Oracle: "http", URL: c.url}}
			r, closeEnv, err := harness.Open(context.Background(), harness.OpenOptions{Kind: harness.EnvExternal, TargetURL: srv.URL,
				Scenarios: []*scenarios.Scenario{s}, Resolver: c.resolver})
			if err == nil {
				_ = closeEnv(context.Background())
				t.Fatalf("opened (%v) with oracle %s", r != nil, c.url)
			}
			if !errors.Is(err, netaddr.ErrNotLoopback) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want ErrNotLoopback containing %q", err, c.want)
			}
		})
	}
}
