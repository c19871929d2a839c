package together

import (
	"slices"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

func load(t *testing.T, jsonl string) *history.History {
	t.Helper()
	h, err := history.Load(strings.NewReader(jsonl), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// driver is one driver's history: one intent on key, answered 201, and
// the effects of both drivers' orders (its oracle read the whole service).
func driver(key, order string, effects ...string) string {
	s := `{"type":"meta","v":1,"scenario":"s","seed":1,"effects_recorded":true}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"` + key + `","attempt":1,"client":0,"ns":1000,"req":{"method":"POST","path":"/o","body":"{}"}}
{"type":"fault","fault":"response-drop","op":1,"ns":1500}
{"type":"info","op":1,"ns":5000,"error":"response dropped"}
{"type":"invoke","op":2,"intent":"i1","tenant":"t1","key":"` + key + `","attempt":2,"client":0,"ns":6000,"req":{"method":"POST","path":"/o","body":"{}"}}
{"type":"ok","op":2,"ns":7000,"resp":{"status":201,"body":"{\"id\":\"` + order + `\"}"}}
`
	for _, e := range effects {
		k, o, _ := strings.Cut(e, "=")
		s += `{"type":"effect","tenant":"t1","key":"` + k + `","effect":"order ` + o + `","ns":8000}` + "\n"
	}
	return s
}

func TestJoin(t *testing.T) {
	t.Parallel()
	a := load(t, driver("ka", "1", "ka=1", "kb=2"))
	b := load(t, driver("kb", "2", "ka=1", "kb=2"))
	h, num, err := Join([]*history.History{a, b}, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if num.OpStride != 10 || len(h.Attempts) != 4 {
		t.Fatalf("stride %d, %d attempts", num.OpStride, len(h.Attempts))
	}
	ops, intents := []int64{}, map[string]bool{}
	for _, at := range h.Attempts {
		ops = append(ops, at.Op)
		intents[at.Intent] = true
	}
	if want := []int64{11, 12, 21, 22}; !slices.Equal(ops, want) {
		t.Errorf("ops %v, want %v", ops, want)
	}
	if !intents["d1/i1"] || !intents["d2/i1"] || len(intents) != 2 {
		t.Errorf("intents %v: the two drivers' i1 must stay two intents", intents)
	}
	// No time of the second file falls within the first's: rules that
	// compare times never pair events of different files.
	var endA int64
	for _, at := range h.Attempts[:2] {
		endA = max(endA, at.Complete)
	}
	for _, at := range h.Attempts[2:] {
		if at.Invoke <= endA {
			t.Errorf("op %d of b invoked at %d, within a (ends %d)", at.Op, at.Invoke, endA)
		}
	}
	if len(h.Faults) != 2 || h.Faults[1].Op != 21 || h.Faults[1].NS <= endA {
		t.Errorf("faults %+v: b's fault must hit op 21 after a's end", h.Faults)
	}
	// Each driver read both orders; the joined history holds each once.
	if len(h.Effects) != 2 {
		t.Fatalf("%d effects, want 2 (read once)", len(h.Effects))
	}
	res := checkers.ExactlyOnce().Check(h, h.Effects)
	if res.Verdict != checkers.Pass || res.Checked != 2 {
		t.Errorf("exactly-once: %v checked %d, want a pass over 2 intents: %+v", res.Verdict, res.Checked, res.Violations)
	}

	// A second order for b's key, read by b only, is a duplicate however
	// it was read.
	a = load(t, driver("ka", "1", "ka=1", "kb=2"))
	b = load(t, driver("kb", "2", "ka=1", "kb=2", "kb=3"))
	h, _, _ = Join([]*history.History{a, b}, []string{"a", "b"})
	if res := checkers.ExactlyOnce().Check(h, h.Effects); res.Verdict != checkers.Violated {
		t.Errorf("exactly-once with a duplicate order: %v", res.Verdict)
	}
}

func TestJoin_SharedKeyRefused(t *testing.T) {
	t.Parallel()
	a, b := load(t, driver("k", "1")), load(t, driver("k", "2"))
	_, _, err := Join([]*history.History{a, b}, []string{"a.jsonl", "b.jsonl"})
	if err == nil || !strings.Contains(err.Error(), `key "k" of tenant "t1" was sent by both a.jsonl and b.jsonl`) {
		t.Errorf("err %v", err)
	}
}

// What each driver's run said of itself joins too: an environment error
// of either file is the whole system's (named by file), a budget that ran
// out in either is the joined step's, the oracle reads are kept; a file
// whose step expects a violation cannot be judged as part of one clean run.
func TestJoin_RunEvents(t *testing.T) {
	t.Parallel()
	a := load(t, driver("ka", "1", "ka=1", "kb=2")+`{"type":"budget","max_requests":7,"ns":8500}
{"type":"oracle","source":"GET http://x/orders","effects":2,"ns":8600}
`)
	b := load(t, driver("kb", "2", "ka=1", "kb=2")+`{"type":"environment","error":"the disk is full","ns":9000}
`)
	h, _, err := Join([]*history.History{a, b}, []string{"a.jsonl", "b.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if h.Environment != "b.jsonl: the disk is full" || len(h.Steps) != 1 || h.Steps[0].MaxRequests != 7 || len(h.Oracle) != 1 {
		t.Fatalf("environment %q, steps %+v, oracle %+v", h.Environment, h.Steps, h.Oracle)
	}
	j := checkers.Judge(h, checkers.Default())
	if j.Verdict != checkers.EnvironmentError || !strings.Contains(j.Reason, "b.jsonl: the disk is full") {
		t.Errorf("judged %s %q, want the environment error of b.jsonl", j.Verdict, j.Reason)
	}
	c := load(t, `{"type":"meta","v":1}
{"type":"step","name":"dup","expect":"exactly-once","ns":1}
`)
	if _, _, err := Join([]*history.History{load(t, driver("ka", "1")), c}, []string{"a.jsonl", "c.jsonl"}); err == nil || !strings.Contains(err.Error(), `c.jsonl: step "dup" expects exactly-once violated`) {
		t.Errorf("a step expecting a violation joined: %v", err)
	}
}
