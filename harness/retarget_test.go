package harness_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

const httpOracleScenario = `
target: {url: "http://127.0.0.1:8080"}
effects:
  oracle: http
  url: EFFECTS
  items: $.effects[*]
  tenant: $.tenant
  key: $.key
  id: $.id
`

// --target moves an effects.url on the scenario's target origin with the
// traffic, and says so; one elsewhere stays. Before, the effects were read
// from the old address and every intent "produced no effect", silently.
func TestRetarget_MovesEffectsURLOnTheTargetOrigin(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"http://127.0.0.1:8080/v1/effects?all=1": "http://127.0.0.1:9191/v1/effects?all=1",
		// Placeholders stay as written, to be rendered per tenant.
		"http://127.0.0.1:8080/customers/{{tenant}}/orders?as={{tenant}}": "http://127.0.0.1:9191/customers/{{tenant}}/orders?as={{tenant}}",
		"http://127.0.0.1:8080":         "http://127.0.0.1:9191",
		"http://127.0.0.1:7000/effects": "http://127.0.0.1:7000/effects",
		"http://localhost:8080/effects": "http://localhost:8080/effects",
	}
	for from, want := range cases {
		s, err := scenarios.Parse("s.yaml", []byte(strings.Replace(httpOracleScenario, "EFFECTS", from, 1)))
		if err != nil {
			t.Fatal(err)
		}
		notes, err := harness.PrepareExternal(s, "http://127.0.0.1:9191", false)
		if err != nil {
			t.Fatal(err)
		}
		if s.Effects.URL != want || s.Target.URL != "http://127.0.0.1:9191" {
			t.Errorf("%s: effects.url %s, target %s; want %s", from, s.Effects.URL, s.Target.URL, want)
		}
		said := strings.Contains(strings.Join(notes, "\n"), "moved to "+want)
		if moved := want != from; said != moved {
			t.Errorf("%s: notes %q; moved %v, said so %v", from, notes, moved, said)
		}
	}
}

// The replay command sets the environment variables the scenario read, so
// that it runs the same scenario; before, it dropped them.
func TestReplayCommand_CarriesEnvironmentAndFlags(t *testing.T) {
	t.Setenv("ORDERS_DSN", "postgres://app:s3 cret@127.0.0.1:5432/orders")
	t.Setenv("EFFECTS_HOST", "")
	s, err := scenarios.Parse("my scenarios/orders.yaml", []byte(`
target: {url: "http://127.0.0.1:8080"}
effects:
  oracle: sql
  dsn: ${ORDERS_DSN}
  query: SELECT tenant, key, id FROM orders
`))
	if err != nil {
		t.Fatal(err)
	}
	got := harness.ReplayCommand(s, 42, "", harness.Invocation{Target: "http://127.0.0.1:9191", DatabaseAddr: "127.0.0.1:5432"})
	want := `ORDERS_DSN='postgres://app:s3 cret@127.0.0.1:5432/orders' idemchaos run -s 'my scenarios/orders.yaml' --seed 42 --target http://127.0.0.1:9191 --db-addr 127.0.0.1:5432`
	if got != want {
		t.Errorf("replay command\n got %s\nwant %s", got, want)
	}
	// A run in containers is replayed in containers.
	got = harness.ReplayCommand(s, 42, "no-lease", harness.Invocation{Env: "docker"})
	want = `ORDERS_DSN='postgres://app:s3 cret@127.0.0.1:5432/orders' idemchaos run -s 'my scenarios/orders.yaml' --seed 42 --mutant no-lease --env docker`
	if got != want {
		t.Errorf("replay command in docker\n got %s\nwant %s", got, want)
	}
}
