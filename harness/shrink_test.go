package harness

import (
	"fmt"
	"testing"

	"github.com/idemchaos/idemchaos/harness/driver"
)

func TestDdmin_FindsTheOneCulprit(t *testing.T) {
	t.Parallel()
	items := make([]int, 50)
	for i := range items {
		items[i] = i
	}
	calls := 0
	got := ddmin(items, func(keep []int) bool {
		calls++
		for _, k := range keep {
			if items[k] == 37 {
				return true
			}
		}
		return false
	})
	if len(got) != 1 || got[0] != 37 {
		t.Fatalf("ddmin kept %v, want [37]", got)
	}
	if calls > 20 {
		t.Fatalf("ddmin took %d tries for one culprit in 50", calls)
	}
}

func TestDdmin_KeepsAPairThatFailsOnlyTogether(t *testing.T) {
	t.Parallel()
	items := make([]int, 50)
	for i := range items {
		items[i] = i
	}
	got := ddmin(items, func(keep []int) bool {
		has := map[int]bool{}
		for _, k := range keep {
			has[items[k]] = true
		}
		return has[3] && has[41]
	})
	if fmt.Sprint(got) != "[3 41]" {
		t.Fatalf("ddmin kept %v, want [3 41]", got)
	}
}

func TestShrinkPlan_DropsFaultsAndOffsetsThatDoNotMatter(t *testing.T) {
	t.Parallel()
	p := Plan{Seed: 1}
	for i := 0; i < 50; i++ {
		in := driver.Intent{ID: fmt.Sprintf("i%d", i), At: 100}
		if i%5 == 0 {
			in.Faults = map[int]string{1: "response-drop#0"}
		}
		if i == 12 {
			in.Clicks = 2 // the culprit: a double click
		}
		p.Intents = append(p.Intents, in)
	}
	p.Timed = []TimedFault{{Kind: "latency"}}
	got := shrinkPlan(p, func(c Plan) bool {
		for _, in := range c.Intents {
			if in.Clicks > 1 {
				return true
			}
		}
		return false
	})
	if len(got.Intents) > 3 || len(got.Timed) != 0 {
		t.Fatalf("shrunk to %d intents and %d timed faults, want ≤ 3 and 0", len(got.Intents), len(got.Timed))
	}
	if got.Intents[0].ID != "i12" || got.Intents[0].At != 0 || got.Intents[0].Faults != nil {
		t.Fatalf("kept %+v", got.Intents[0])
	}
}
