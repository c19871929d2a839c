package checkers_test

import (
	"os"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// A contract that refuses every repeat survives the meta line, and a bad
// one is refused: check and merge judge by what the run judged by.
func TestContract_RepeatRefuseRoundTrip(t *testing.T) {
	t.Parallel()
	c := checkers.DefaultContract()
	c.Profile = checkers.Profile{Name: "custom", MissingKey: 400, Reuse: 412, InFlight: 412, Refuse: 412}
	m := c.Meta()
	if m.Repeat != checkers.RepeatRefuse || m.RepeatStatus != 412 {
		t.Fatalf("meta %+v", m)
	}
	back, err := checkers.ContractFromMeta(m)
	if err != nil || back.Profile.Refuse != 412 {
		t.Fatalf("from meta: %+v, %v", back.Profile, err)
	}
	for _, bad := range []*history.Contract{
		{Profile: "custom", Reuse: 412, InFlight: 412, Repeat: "refuse"},
		{Profile: "custom", Reuse: 412, InFlight: 412, Repeat: "sometimes", RepeatStatus: 412},
		{Profile: "custom", Reuse: 412, InFlight: 412, Repeat: "refuse", RepeatStatus: 503},
	} {
		if _, err := checkers.ContractFromMeta(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// Under repeat: refuse, an intent that executed while its answer was lost
// and its retry was refused is no violation, but its cost is said: the
// client never learns its order.
func TestExactlyOnce_RefuseNotesTheLostAnswer(t *testing.T) {
	t.Parallel()
	f, err := os.Open(goldenDir + "/replay-identical/refuse-contract-retry-refused-ok.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.Load(f, history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkers.ContractFromMeta(h.Meta.Contract)
	if err != nil {
		t.Fatal(err)
	}
	r := checkers.ExactlyOnce(checkers.WithContract(c)).Check(h, h.Effects)
	if r.Verdict != checkers.Pass || !strings.Contains(r.Reason, "1 intent executed but its answer was lost") || !strings.Contains(r.Reason, "never learns its order") {
		t.Fatalf("%s: %q", r.Verdict, r.Reason)
	}
}
