package checkers_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// A client contract survives the meta event: what a run writes, a later
// check reads back; what the meta leaves out is the default.
func TestClientContract_RoundTripsThroughMeta(t *testing.T) {
	t.Parallel()
	c := checkers.ClientContract{Budget: 3, GlobalBudget: 40, RetryStatuses: []int{503}, PermanentStatuses: []int{422},
		MinBackoff: 20 * time.Millisecond, Jitter: "optional", Unknown: "forbidden"}
	if got := checkers.ClientContractFromMeta(c.Meta()); !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip: got %+v, want %+v", got, c)
	}
	if got, want := checkers.ClientContractFromMeta(&history.ClientContract{Budget: 2}), checkers.DefaultClientContract(); got.Budget != 2 || got.Jitter != want.Jitter || !reflect.DeepEqual(got.PermanentStatuses, want.PermanentStatuses) {
		t.Fatalf("defaults for what the meta leaves out: %+v", got)
	}
	if got := checkers.ClientContractFromMeta(nil); !reflect.DeepEqual(got, checkers.DefaultClientContract()) {
		t.Fatalf("no meta: %+v", got)
	}
}

// The option overrides the contract a history carries: a budget of 1 makes
// a retried intent unbounded.
func TestWithClientContract_OverridesTheMeta(t *testing.T) {
	t.Parallel()
	h := loadGolden(t, "../testdata/histories/key-stable/client-lost-answer-same-key-ok.jsonl", nil)
	if r := checkers.Bounded().Check(h, h.Effects); r.Verdict != checkers.Pass {
		t.Fatalf("with the meta's budget: %s", r.Verdict)
	}
	c := checkers.DefaultClientContract()
	c.Budget = 1
	if r := checkers.Bounded(checkers.WithClientContract(c)).Check(h, h.Effects); r.Verdict != checkers.Violated {
		t.Fatalf("with a budget of 1: %s, want a violation", r.Verdict)
	}
}
