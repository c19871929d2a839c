package checkers_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

func loadString(t *testing.T, s string) *history.History {
	t.Helper()
	h, err := history.Load(strings.NewReader(s), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Two intents reuse one key with different payloads and the service
// executes both (reuse-rejected's violation): each has one effect, and the
// effects name only the key. exactly-once must not pin both effects on one
// intent and call the other lost ("i3 produced 2 effects, i2 none").
func TestExactlyOnce_SharedKeyEffectsAreNotMisattributed(t *testing.T) {
	t.Parallel()
	h := loadString(t, `{"type":"meta","v":1,"effects_recorded":true}
{"type":"invoke","op":1,"intent":"i2","tenant":"t1","key":"k","ns":1,"req":{"method":"POST","path":"/o","body":"{\"sku\":\"lamp\"}"}}
{"type":"ok","op":1,"ns":2,"resp":{"status":201,"body":"{\"id\":\"o-1\"}"}}
{"type":"invoke","op":2,"intent":"i3","tenant":"t1","key":"k","ns":3,"req":{"method":"POST","path":"/o","body":"{\"sku\":\"desk\"}"}}
{"type":"ok","op":2,"ns":4,"resp":{"status":201,"body":"{\"id\":\"o-2\"}"}}
{"type":"effect","tenant":"t1","key":"k","effect":"order o-1","ns":9}
{"type":"effect","tenant":"t1","key":"k","effect":"order o-2","ns":9}
`)
	if r := checkers.ExactlyOnce().Check(h, h.Effects); r.Verdict != checkers.Pass || r.Checked != 2 {
		t.Fatalf("exactly-once: %s, checked %d: %v", r.Verdict, r.Checked, r.Failures())
	}
	if r := checkers.ReuseRejected().Check(h, h.Effects); r.Verdict != checkers.Violated {
		t.Fatalf("reuse-rejected must catch the executed reuse, got %s", r.Verdict)
	}
}

// An effect that names its intent is attributed to it exactly, even when
// another intent used the same key first.
func TestExactlyOnce_EffectIntentIsExact(t *testing.T) {
	t.Parallel()
	h := loadString(t, `{"type":"meta","v":1,"effects_recorded":true}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k","ns":1,"req":{"method":"POST","path":"/o","body":"{\"sku\":\"lamp\"}"}}
{"type":"ok","op":1,"ns":2,"resp":{"status":201,"body":"{\"id\":\"o-1\"}"}}
{"type":"invoke","op":2,"intent":"i2","tenant":"t1","key":"k","ns":3,"req":{"method":"POST","path":"/o","body":"{\"sku\":\"desk\"}"}}
{"type":"ok","op":2,"ns":4,"resp":{"status":201,"body":"{\"id\":\"o-2\"}"}}
{"type":"effect","tenant":"t1","key":"k","intent":"i2","effect":"order o-2","ns":9}
{"type":"effect","tenant":"t1","key":"k","intent":"i2","effect":"order o-3","ns":9}
`)
	r := checkers.ExactlyOnce().Check(h, h.Effects)
	// i2 has two effects of its own, i1 none: two definite findings, each
	// pinned on its own intent.
	if r.Verdict != checkers.Violated || len(r.Violations) != 2 {
		t.Fatalf("got %s: %v", r.Verdict, r.Failures())
	}
	if v := r.Violations[0]; v.Intent != "i1" || !strings.Contains(v.Explanation, "produced no effect") {
		t.Errorf("first violation %+v, want i1's lost effect", v)
	}
	if v := r.Violations[1]; v.Intent != "i2" || !strings.Contains(v.Explanation, "2 order effects") {
		t.Errorf("second violation %+v, want i2's duplicate", v)
	}
}

// effects_recorded:false: acknowledged intents with no effect events are
// never reported as lost, but a duplicate that was read is still one.
func TestExactlyOnce_EffectsNotReadNeverLost(t *testing.T) {
	t.Parallel()
	h := loadString(t, `{"type":"meta","v":1,"effects_recorded":false}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k1","ns":1,"req":{"method":"POST","path":"/o","body":"a"}}
{"type":"ok","op":1,"ns":2,"resp":{"status":201,"body":"{\"id\":\"o-1\"}"}}
{"type":"invoke","op":2,"intent":"i2","tenant":"t1","key":"k2","ns":3,"req":{"method":"POST","path":"/o","body":"b"}}
{"type":"ok","op":2,"ns":4,"resp":{"status":201,"body":"{\"id\":\"o-2\"}"}}
{"type":"effect","tenant":"t1","key":"k2","effect":"order o-2","ns":9}
{"type":"effect","tenant":"t1","key":"k2","effect":"order o-3","ns":9}
`)
	r := checkers.ExactlyOnce().Check(h, h.Effects)
	if r.Verdict != checkers.Violated || len(r.Violations) != 1 || r.Violations[0].Intent != "i2" {
		t.Fatalf("want only i2's duplicate, got %s: %v", r.Verdict, r.Failures())
	}
	if !strings.Contains(r.Reason, "effects_recorded: false") {
		t.Errorf("the note must say lost effects were not judged: %q", r.Reason)
	}
	for _, v := range r.Violations {
		if strings.Contains(v.Explanation, "no effect") {
			t.Errorf("reported a lost effect although effects were not read: %s", v.Explanation)
		}
	}
}

// An effect whose kind says nothing is counted without it: "2 effects",
// never "2 effect effects".
func TestExactlyOnce_EffectWording(t *testing.T) {
	t.Parallel()
	h := loadString(t, `{"type":"meta","v":1,"effects_recorded":true}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k","ns":1,"req":{"method":"POST","path":"/o","body":"a"}}
{"type":"ok","op":1,"ns":2,"resp":{"status":201,"body":"{}"}}
{"type":"effect","tenant":"t1","key":"k","effect":"effect 1","ns":9}
{"type":"effect","tenant":"t1","key":"k","effect":"effect 2","ns":9}
`)
	r := checkers.ExactlyOnce().Check(h, h.Effects)
	if r.Verdict != checkers.Violated {
		t.Fatalf("got %s", r.Verdict)
	}
	if e := r.Violations[0].Explanation; strings.Contains(e, "effect effects") || !strings.Contains(e, "produced 2 effects (effect 1, effect 2)") {
		t.Errorf("wording: %s", e)
	}
}
