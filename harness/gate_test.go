package harness_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/scenarios"
)

// loopbackService is a service on loopback that answers everything.
func loopbackService(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(201) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

// parse loads a scenario from YAML text, as from a file named x.yaml.
func parse(t *testing.T, yaml string) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Parse("x.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openRefused(t *testing.T, opts harness.OpenOptions) error {
	t.Helper()
	_, closeEnv, err := harness.Open(context.Background(), opts)
	if err == nil {
		_ = closeEnv(context.Background())
		t.Fatal("opened")
	}
	return err
}

// The sql oracle's DSN passes the gate in every form — URL, multi-host
// URL, key=value, multi-host key=value, a name that needs DNS — before
// the environment starts, and the refusal points at effects.dsn in its
// file. Before the gate, effects.dsn was never checked at all.
func TestOpen_SQLOracleDSNMustBeLoopback(t *testing.T) {
	t.Parallel()
	svc := loopbackService(t)
	for _, dsn := range []string{
		"postgres://u@203.0.113.9:5432/db",
		"postgres://u@127.0.0.1:5432,203.0.113.9:5432/db",
		"host=203.0.113.9 dbname=db",
		"host=127.0.0.1,db.example.com port=5432,5432 dbname=db",
		"postgresql://u@localhost.example.com/db",
	} {
		s := parse(t, fmt.Sprintf("target:\n  url: %s\neffects:\n  oracle: sql\n  dsn: %q\n  query: SELECT 1, 2, 3\n", svc, dsn))
		err := openRefused(t, harness.OpenOptions{TargetURL: svc, Scenarios: []*scenarios.Scenario{s}, HostsFile: hostsFile(t)})
		if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.HasPrefix(err.Error(), "x.yaml:5:8: effects.dsn ") {
			t.Errorf("%s: %v", dsn, err)
		}
	}
}

// A scenario file alone cannot open remote traffic: its
// target.allow_remote demands the command line's --allow-remote, and the
// run stops at the key without it. With the flag the same file runs.
func TestOpen_AllowRemoteInTheFileNeedsTheFlag(t *testing.T) {
	t.Parallel()
	svc := loopbackService(t)
	s := parse(t, "name: remote\ntarget:\n  url: "+svc+"\n  allow_remote: true\neffects:\n  oracle: none\n")
	err := openRefused(t, harness.OpenOptions{TargetURL: svc, Scenarios: []*scenarios.Scenario{s}})
	if !errors.Is(err, harness.ErrRemoteNotAllowed) || !strings.HasPrefix(err.Error(), "x.yaml:4:3: target.allow_remote: remote declares a target off this machine") ||
		!strings.Contains(err.Error(), "pass --allow-remote") {
		t.Fatalf("%v", err)
	}
	r, closeEnv, err := harness.Open(context.Background(), harness.OpenOptions{TargetURL: svc, Scenarios: []*scenarios.Scenario{s}, AllowRemote: true})
	if err != nil {
		t.Fatalf("with --allow-remote: %v", err)
	}
	_ = closeEnv(context.Background())
	_ = r
	// check --effects says the same.
	if _, err := harness.ScenarioOracle(context.Background(), s, false); !errors.Is(err, harness.ErrRemoteNotAllowed) {
		t.Fatalf("ScenarioOracle: %v", err)
	}
}

// --toxiproxy (and IDEMCHAOS_TOXIPROXY, which sets it) is checked before
// any environment starts, in every environment.
func TestOpen_ToxiproxyMustBeLoopback(t *testing.T) {
	t.Parallel()
	svc := loopbackService(t)
	for _, kind := range []harness.EnvKind{harness.EnvExternal, harness.EnvLocal} {
		for _, u := range []string{"http://203.0.113.9:8474", "http://toxiproxy.example.com:8474"} {
			opts := harness.OpenOptions{Kind: kind, ToxiproxyURL: u, HostsFile: hostsFile(t)}
			if kind == harness.EnvExternal {
				opts.TargetURL = svc
			}
			err := openRefused(t, opts)
			if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "--toxiproxy ") {
				t.Errorf("%s %s: %v", kind, u, err)
			}
		}
	}
}

// --db-listen on every interface (":6432" included) opens the database
// proxy to other machines: refused without --allow-remote.
func TestOpen_DatabaseListenOnEveryInterface(t *testing.T) {
	t.Parallel()
	svc := loopbackService(t)
	db := strings.TrimPrefix(loopbackService(t), "http://")
	for _, listen := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		err := openRefused(t, harness.OpenOptions{TargetURL: svc, DatabaseAddr: db, DatabaseListen: listen})
		if !errors.Is(err, addrgate.ErrNotLoopback) || !strings.Contains(err.Error(), "listens on every interface") {
			t.Errorf("%s: %v", listen, err)
		}
	}
}

// A target name that needs DNS is refused before the question is asked.
func TestOpen_TargetNameNeedsDNS(t *testing.T) {
	t.Parallel()
	err := openRefused(t, harness.OpenOptions{TargetURL: "http://api.example.com:8080", HostsFile: hostsFile(t)})
	var nl *addrgate.NotLoopbackError
	if !errors.As(err, &nl) || nl.Reason != addrgate.ReasonDNS || nl.Setting != "--target" {
		t.Fatalf("%v", err)
	}
}

// A refused target is reported as the target, even when the scenario's
// effects.url names the same host (moved with --target): it was reported
// as an effects.url problem.
func TestOpen_RefusedTargetIsTheTargets(t *testing.T) {
	t.Parallel()
	s, err := scenarios.Parse("t.yaml", []byte("target: {url: \"http://10.1.2.3:8080\", allow_remote: true}\neffects: {oracle: http, url: \"http://10.1.2.3:8080/effects\", items: \"$.orders[*]\", tenant: $.tenant, key: $.key, id: $.id}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.Target.AllowRemote = false // as --target leaves it: the command line decides
	err = openRefused(t, harness.OpenOptions{TargetURL: "http://10.1.2.3:8080", Scenarios: []*scenarios.Scenario{s}})
	var nl *addrgate.NotLoopbackError
	if !errors.As(err, &nl) || nl.Setting != "--target" || strings.Contains(err.Error(), "effects.url") {
		t.Fatalf("%v: want the target named, not effects.url", err)
	}
}
