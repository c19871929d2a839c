package scenarios_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/scenarios"
)

// TestParse_MaxKeyLengthRefusesLongerKeys: a scenario whose keys would be
// longer than contract.max_key_length is refused at the field's position
// (before, a service that cut keys to 50 characters merged the intents of
// a scenario with a long name, silently); one whose keys fit loads, and
// the limit reaches the checkers' contract (and so the history's meta).
func TestParse_MaxKeyLengthRefusesLongerKeys(t *testing.T) {
	t.Parallel()
	src := "name: a-rather-long-scenario-name-for-orders\ntarget: {url: \"http://127.0.0.1:9\"}\ncontract: {max_key_length: LIMIT}\ntraffic: {intents: 3}\neffects: {oracle: none}\n"
	_, err := scenarios.Parse("long.yaml", []byte(strings.Replace(src, "LIMIT", "50", 1)))
	if err == nil || !strings.Contains(err.Error(), "long.yaml:3:28: contract.max_key_length: this scenario's keys are up to 57 characters") {
		t.Fatalf("got %v, want a refusal at long.yaml:3:28 naming 57 characters", err)
	}
	s, err := scenarios.Parse("long.yaml", []byte(strings.Replace(src, "LIMIT", "57", 1)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CheckerContract()
	if err != nil || c.MaxKeyLength != 57 || c.Meta().MaxKeyLength != 57 {
		t.Fatalf("contract %+v, %v: the limit must reach the meta", c, err)
	}
	if got := s.LongestKey(7); got != "a-rather-long-scenario-name-for-orders-xxxxxxxx-k7-3" {
		t.Errorf("longest key %q", got)
	}
}
