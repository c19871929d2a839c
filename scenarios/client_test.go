package scenarios_test

import (
	"slices"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/scenarios"
)

func TestParse_ClientScenario_DefaultsAndTheReferenceUpstream(t *testing.T) {
	t.Parallel()
	s, err := scenarios.Parse("client.yaml", []byte(`
client:
  command: ["./my-client", "create-order"]
  env: {MY_SDK_LOG: debug}
faults:
  - kind: unavailable
    when: {fraction: 0.5, every: true}
  - kind: gateway-5xx
    when: {attempt: 1, attempts: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !s.IsClient() || s.Target.Reference == nil {
		t.Fatalf("client %v, target %+v: want a client scenario on the reference", s.IsClient(), s.Target)
	}
	c := s.Client
	if c.Intents != 20 || c.Concurrency != 8 || c.Timeout != 30*time.Second || c.Env["MY_SDK_LOG"] != "debug" {
		t.Errorf("client defaults: %+v", c)
	}
	k := c.Contract
	if k.Budget != 5 || k.Jitter != "required" || k.Unknown != "allowed" || !slices.Contains(k.RetryStatuses, 429) || !slices.Contains(k.PermanentStatuses, 422) {
		t.Errorf("contract defaults: %+v", k)
	}
	if w := s.Faults[0].When; !w.Every || w.Fraction != 0.5 {
		t.Errorf("when: %+v", w)
	}
	if w := s.Faults[1].When; w.Attempts != 2 || w.Attempt != 1 {
		t.Errorf("when: %+v", w)
	}
	for _, inv := range s.Invariants {
		if !slices.Contains(checkers.SuiteNames(checkers.SuiteClient), inv.Name) {
			t.Errorf("a client scenario judges %s, a server invariant", inv.Name)
		}
	}
}
