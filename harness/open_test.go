package harness_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/scenarios"
)

// hostsFile is an /etc/hosts of the test's making.
func hostsFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The http oracle is sent requests too: its host must resolve to loopback
// only, like the target's, and the refusal names effects.url.
func TestOpen_HTTPOracleMustBeLoopback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	away := hostsFile(t, "10.9.8.7 localhost effects.test")
	for name, c := range map[string]struct {
		url   string
		hosts string
		want  string
	}{
		"a remote address":        {"http://10.0.0.9/effects", "", "effects.url 10.0.0.9:80 is not a loopback address"},
		"localhost mapped away":   {"http://localhost:9000/effects", away, "effects.url localhost:9000 resolves to 10.9.8.7"},
		"a name mapped away, TLS": {"https://effects.test/x", away, "effects.url effects.test:443 resolves to 10.9.8.7"},
		"a name that needs DNS":   {"https://effects.example.com/x", "", `"effects.example.com" is not in`},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scenarios.Scenario{Name: "oracle", Target: scenarios.Target{URL: srv.URL},
				Effects: scenarios.Effects{Oracle: "http", URL: c.url}}
			r, closeEnv, err := harness.Open(context.Background(), harness.OpenOptions{Kind: harness.EnvExternal, TargetURL: srv.URL,
				Scenarios: []*scenarios.Scenario{s}, HostsFile: c.hosts})
			if err == nil {
				_ = closeEnv(context.Background())
				t.Fatalf("opened (%v) with oracle %s", r != nil, c.url)
			}
			if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want ErrNotLoopback containing %q", err, c.want)
			}
		})
	}
}

// The harness alone does not link the docker environment: asking for it,
// or for a service image that only it can start, says what to import
// instead of failing somewhere inside.
func TestOpen_DockerNotLinkedSaysWhatToImport(t *testing.T) {
	t.Parallel()
	image := &scenarios.Scenario{Name: "image", Target: scenarios.Target{Image: "ordersvc:local"}}
	for name, opts := range map[string]harness.OpenOptions{
		"asked for":             {Kind: harness.EnvDocker},
		"an image target, auto": {Scenarios: []*scenarios.Scenario{image}},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := harness.Open(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), `import _ "github.com/idemchaos/idemchaos/harness/docker"`) {
				t.Fatalf("%v, want an error naming the import", err)
			}
		})
	}
	if _, _, err := harness.Open(context.Background(), harness.OpenOptions{Kind: "k8s"}); err == nil ||
		!strings.Contains(err.Error(), `unknown environment kind "k8s" (known: external, local)`) {
		t.Fatalf("an unknown kind: %v", err)
	}
}

func TestParseEnvKind_Names(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]harness.EnvKind{"": harness.EnvAuto, "auto": harness.EnvAuto, "Local": harness.EnvLocal,
		"external": harness.EnvExternal, " docker ": harness.EnvDocker} {
		if got, err := harness.ParseEnvKind(in); err != nil || got != want {
			t.Errorf("ParseEnvKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := harness.ParseEnvKind("k8s"); err == nil || !strings.Contains(err.Error(), "want auto, local, external or docker") {
		t.Errorf("ParseEnvKind(k8s): %v", err)
	}
}

// The sql oracle connects too: every host of its DSN, as its driver would
// try them (a Postgres DSN's fallback hosts included), must be loopback.
func TestOpen_SQLOracleMustBeLoopback(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	for dsn, want := range map[string]string{
		"postgres://u@10.0.0.9/orders":                 "effects.dsn 10.0.0.9:5432 is not a loopback address",
		"postgres://u@127.0.0.1:5432,10.0.0.8:5433/db": "effects.dsn 10.0.0.8:5433 is not a loopback address",
		"host=127.0.0.1,10.0.0.7 dbname=db":            "effects.dsn 10.0.0.7:5432 is not a loopback address",
	} {
		t.Run(dsn, func(t *testing.T) {
			s := &scenarios.Scenario{Name: "oracle", Target: scenarios.Target{URL: srv.URL},
				Effects: scenarios.Effects{Oracle: "sql", DSN: dsn, Query: "SELECT 1, 2, 3"}}
			_, closeEnv, err := harness.Open(context.Background(), harness.OpenOptions{Kind: harness.EnvExternal, TargetURL: srv.URL,
				Scenarios: []*scenarios.Scenario{s}})
			if err == nil {
				_ = closeEnv(context.Background())
				t.Fatalf("opened with oracle %s", dsn)
			}
			if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), want) {
				t.Fatalf("%v, want ErrNotLoopback containing %q", err, want)
			}
		})
	}
}
