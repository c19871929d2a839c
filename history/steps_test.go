package history_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

// A run's own events (steps, budget, environment, oracle) load into the
// History: the steps with where each began, the budget in its step, the
// environment errors and the oracle's reads.
func TestLoad_RunEvents(t *testing.T) {
	t.Parallel()
	h, err := history.Load(strings.NewReader(`{"type":"meta","v":1,"effects_recorded":true,"invariants":["exactly-once"]}
{"type":"step","name":"first","ns":1}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k1","ns":2,"req":{"method":"POST","path":"/o","body":"a"}}
{"type":"ok","op":1,"ns":3,"resp":{"status":201,"body":"{}"}}
{"type":"oracle","source":"GET http://x/o","effects":1,"ns":4}
{"type":"effect","tenant":"t1","key":"k1","effect":"order 1","ns":4}
{"type":"step","name":"second","expect":"exactly-once","ns":10}
{"type":"invoke","op":2,"intent":"i2","tenant":"t1","key":"k2","ns":11,"req":{"method":"POST","path":"/o","body":"b"}}
{"type":"ok","op":2,"ns":12,"resp":{"status":201,"body":"{}"}}
{"type":"budget","max_requests":1,"ns":13}
{"type":"environment","error":"the disk is full","ns":14}
{"type":"environment","error":"the disk is full","ns":15}
`), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Steps) != 2 || h.StepCount() != 2 {
		t.Fatalf("steps %+v", h.Steps)
	}
	first, second := h.Steps[0], h.Steps[1]
	if first.Name != "first" || first.Expect != "clean" || first.Attempts != 0 || first.MaxRequests != 0 {
		t.Errorf("first step %+v", first)
	}
	if second.Name != "second" || second.Expect != "exactly-once" || second.Attempts != 1 || second.Effects != 1 || second.NS != 10 || second.MaxRequests != 1 {
		t.Errorf("second step %+v", second)
	}
	if got := h.StepAttempts(1); len(got) != 1 || got[0].Op != 2 {
		t.Errorf("second step's attempts %+v", got)
	}
	if h.Environment != "the disk is full" || len(h.Oracle) != 1 || h.Oracle[0].Source != "GET http://x/o" || h.Oracle[0].Effects != 1 {
		t.Errorf("environment %q, oracle %+v", h.Environment, h.Oracle)
	}
	if len(h.Meta.Invariants) != 1 || h.Meta.Invariants[0] != "exactly-once" {
		t.Errorf("meta invariants %v", h.Meta.Invariants)
	}
	p := h.Through(0)
	if len(p.Attempts) != 1 || len(p.Effects) != 1 || p.End != 10 || len(p.Steps) != 1 || len(p.Oracle) != 1 {
		t.Errorf("through step 1: %d attempts, %d effects, end %d, %d steps", len(p.Attempts), len(p.Effects), p.End, len(p.Steps))
	}
	if h.Through(1) != h {
		t.Error("the last step's history is the whole")
	}
}

// An attempt of a step that completed only after the next step began (a
// foreign producer's steps) is open in the earlier step's history, as it
// was when that step ended; the whole history is left as it is.
func TestThrough_ReopensLateCompletions(t *testing.T) {
	t.Parallel()
	h, err := history.Load(strings.NewReader(`{"type":"meta","v":1}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k1","ns":2,"req":{"method":"POST","path":"/o","body":"a"}}
{"type":"step","name":"later","ns":5}
{"type":"ok","op":1,"ns":7,"resp":{"status":201,"body":"{}"}}
`), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Attempts before the first step event are the first step's.
	if h.StepCount() != 1 || len(h.StepAttempts(0)) != 1 {
		t.Fatalf("steps %+v", h.Steps)
	}
	h2, _ := history.Load(strings.NewReader(`{"type":"meta","v":1}
{"type":"step","name":"one","ns":1}
{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k1","ns":2,"req":{"method":"POST","path":"/o","body":"a"}}
{"type":"step","name":"two","ns":5}
{"type":"ok","op":1,"ns":7,"resp":{"status":201,"body":"{}"}}
`), history.LoadOptions{})
	p := h2.Through(0)
	if a := p.Attempts[0]; a.Done() || a.Outcome != history.Info || a.Status != 0 {
		t.Errorf("through step 1 the attempt is %+v, want open", a)
	}
	if a := h2.Attempts[0]; !a.Done() || a.Status != 201 {
		t.Errorf("the whole history's attempt is %+v, want its 201", a)
	}
}

// The run's events are checked like every other line: a cause must be
// given, counts must not be negative.
func TestReader_RunEventErrors(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{
		`{"type":"environment","ns":1}`:                     `missing "error"`,
		`{"type":"environment","error":"","ns":1}`:          `must name the cause`,
		`{"type":"budget","max_requests":-1}`:               `must not be negative`,
		`{"type":"oracle","effects":-2}`:                    `must not be negative`,
		`{"type":"step","name":3}`:                          `"name" must be a string`,
		`{"type":"meta","v":1,"invariants":"exactly-once"}`: `must be an array of invariant names`,
	} {
		src := `{"type":"meta","v":1}` + "\n" + line + "\n"
		if strings.HasPrefix(line, `{"type":"meta"`) {
			src = line + "\n"
		}
		_, err := history.Load(strings.NewReader(src), history.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", line, err, want)
		}
	}
}

// A client run's invocations and beliefs belong to the step they were
// recorded in: the history through a step holds only its own and earlier.
func TestThrough_KeepsTheStepsInvocationsAndBeliefs(t *testing.T) {
	t.Parallel()
	in := `{"type":"meta","v":1,"mode":"client"}` + "\n" +
		`{"type":"step","name":"one","ns":1}` + "\n" +
		`{"type":"invocation","intent":"a","ns":2}` + "\n" +
		`{"type":"belief","intent":"a","belief":"success","ns":3}` + "\n" +
		`{"type":"step","name":"two","ns":4}` + "\n" +
		`{"type":"invocation","intent":"b","ns":5}` + "\n" +
		`{"type":"belief","intent":"b","belief":"failure","exit":1,"ns":6}` + "\n"
	h, err := history.Load(strings.NewReader(in), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := h.Through(0)
	if len(first.Invocations) != 1 || first.Invocations[0].Intent != "a" || len(first.Beliefs) != 1 || first.Beliefs[0].Intent != "a" {
		t.Fatalf("step one: %+v %+v", first.Invocations, first.Beliefs)
	}
	if all := h.Through(1); len(all.Invocations) != 2 || len(all.Beliefs) != 2 {
		t.Fatalf("step two: %+v %+v", all.Invocations, all.Beliefs)
	}
}
