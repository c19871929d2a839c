package harness_test

import (
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// The replay command sets the environment variables the scenario read, so
// that it runs the same scenario; before, it dropped them.
func TestReplayCommand_CarriesEnvironmentAndFlags(t *testing.T) {
	t.Setenv("ORDERS_DSN", "postgres://app:s3cret@127.0.0.1:5432/orders?sslmode=disable&application_name=orders")
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
	want := `ORDERS_DSN='postgres://app:s3cret@127.0.0.1:5432/orders?sslmode=disable&application_name=orders' idemchaos run -s 'my scenarios/orders.yaml' --seed 42 --target http://127.0.0.1:9191 --db-addr 127.0.0.1:5432`
	if got != want {
		t.Errorf("replay command\n got %s\nwant %s", got, want)
	}
	// A run in containers is replayed in containers.
	got = harness.ReplayCommand(s, 42, "no-lease", harness.Invocation{Env: "docker"})
	want = `ORDERS_DSN='postgres://app:s3cret@127.0.0.1:5432/orders?sslmode=disable&application_name=orders' idemchaos run -s 'my scenarios/orders.yaml' --seed 42 --mutant no-lease --env docker`
	if got != want {
		t.Errorf("replay command in docker\n got %s\nwant %s", got, want)
	}
}
