package main

import (
	"strings"
	"testing"

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
		notes := retarget(s, "http://127.0.0.1:9191", false)
		if s.Effects.URL != want || s.Target.URL != "http://127.0.0.1:9191" {
			t.Errorf("%s: effects.url %s, target %s; want %s", from, s.Effects.URL, s.Target.URL, want)
		}
		said := strings.Contains(strings.Join(notes, "\n"), "moved to "+want)
		if moved := want != from; said != moved {
			t.Errorf("%s: notes %q; moved %v, said so %v", from, notes, moved, said)
		}
	}
}

// --target replaces the file's target, and its declaration with it: only
// the --allow-remote flag decides whether the new target may be remote.
func TestRetarget_DoesNotKeepTheFilesAllowance(t *testing.T) {
	t.Parallel()
	s, err := scenarios.Parse("x.yaml", []byte("target:\n  url: https://api.example.com\n  allow_remote: true\neffects:\n  oracle: none\n"))
	if err != nil {
		t.Fatal(err)
	}
	retarget(s, "http://127.0.0.1:8080", false)
	if s.Target.AllowRemote {
		t.Fatal("the file's allow_remote survived --target without --allow-remote")
	}
	retarget(s, "http://127.0.0.1:8080", true)
	if !s.Target.AllowRemote {
		t.Fatal("--allow-remote did not carry over to the new target")
	}
}
