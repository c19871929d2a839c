package history

import "strings"

// Step is one step of a run, as its step event recorded it: every event
// after that event, up to the next step's, belongs to it.
type Step struct {
	Name string
	// Expect is "clean" (every invariant holds) or the invariant the step
	// expects violated.
	Expect string
	NS     int64
	// Attempts, Faults, Effects and Events count what the history held when
	// the step began: its own attempts are Attempts[Attempts:] up to the
	// next step's.
	Attempts, Faults, Effects, Events int
	// Invocations and Beliefs count a client run's invocation and belief
	// events before the step.
	Invocations, Beliefs int
	// MaxRequests is the request budget that ran out in the step (a budget
	// event), 0 when it did not.
	MaxRequests int64
}

// OracleRead is one read of the effect oracle (an oracle event).
type OracleRead struct {
	// Source is where it read ("GET <url>", "query <sql>").
	Source string
	// Effects is how many effects it returned, those of earlier reads
	// included; Got, what came back when it returned none.
	Effects int
	Got     string
	NS      int64
}

// addRun applies a step, budget, environment, oracle or settled event; attempts and
// effects are how many the loader holds so far.
func (h *History) addRun(e *Event, attempts, effects int) {
	switch e.Type {
	case TypeStep:
		expect := e.Expect
		if expect == "" {
			expect = "clean"
		}
		h.Steps = append(h.Steps, Step{Name: e.Name, Expect: expect, NS: e.NS,
			Attempts: attempts, Faults: len(h.Faults), Effects: effects, Events: h.Events - 1,
			Invocations: len(h.Invocations), Beliefs: len(h.Beliefs)})
	case TypeBudget:
		if len(h.Steps) == 0 {
			// A budget before any step event is the implicit first step's.
			h.Steps = append(h.Steps, Step{Expect: "clean"})
		}
		h.Steps[len(h.Steps)-1].MaxRequests = max(h.Steps[len(h.Steps)-1].MaxRequests, e.MaxRequests)
	case TypeEnvironment:
		if !strings.Contains(h.Environment, e.Error) {
			h.Environment = join(h.Environment, e.Error)
		}
	case TypeOracle:
		h.Oracle = append(h.Oracle, OracleRead{Source: e.Source, Effects: e.Read, Got: e.Got, NS: e.NS})
	case TypeSettled:
		h.Settled = append(h.Settled, e.NS)
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// StepCount is how many steps the history holds: its step events, or one
// when it has none.
func (h *History) StepCount() int { return max(len(h.Steps), 1) }

// StepInfo returns step i (of [History.StepCount]); the implicit step of a
// history without step events expects every invariant to hold.
func (h *History) StepInfo(i int) Step {
	if len(h.Steps) == 0 {
		return Step{Expect: "clean"}
	}
	return h.Steps[i]
}

// StepAttempts returns the attempts step i sent itself (attempts recorded
// before the first step event count as the first step's).
func (h *History) StepAttempts(i int) []Attempt {
	from, to := 0, len(h.Attempts)
	if i > 0 {
		from = h.Steps[i].Attempts
	}
	if i+1 < len(h.Steps) {
		to = h.Steps[i+1].Attempts
	}
	return h.Attempts[from:to]
}

// Through returns the history as it stood when step i ended: its events up
// to the next step event, which is also its end in time. The last step's is
// h itself. An attempt that completed only after the step (which the
// harness, waiting for every attempt of a step, never records) is open in
// the result, as it was then; slices are shared with h otherwise.
func (h *History) Through(i int) *History {
	if i+1 >= len(h.Steps) {
		return h
	}
	next := h.Steps[i+1]
	out := *h
	out.Steps = h.Steps[:i+1]
	out.Attempts = h.Attempts[:next.Attempts]
	out.Faults = h.Faults[:next.Faults]
	out.Effects = h.Effects[:next.Effects]
	out.Invocations = h.Invocations[:next.Invocations:next.Invocations]
	out.Beliefs = h.Beliefs[:next.Beliefs:next.Beliefs]
	out.Acks = nil
	for _, a := range h.Acks {
		if a.NS <= next.NS {
			out.Acks = append(out.Acks, a)
		}
	}
	out.Deliveries = nil
	for _, d := range h.Deliveries {
		if d.NS <= next.NS {
			out.Deliveries = append(out.Deliveries, d)
		}
	}
	out.States = nil
	for _, r := range h.States {
		if r.NS <= next.NS {
			out.States = append(out.States, r)
		}
	}
	out.Transitions = nil
	for _, t := range h.Transitions {
		if t.NS <= next.NS {
			out.Transitions = append(out.Transitions, t)
		}
	}
	out.Events, out.End = next.Events, next.NS
	// What came after the step did not end it: an interrupt or a cut-off
	// line later on leaves this step's events whole.
	out.Truncated, out.Interrupted = false, ""
	out.Oracle = nil
	for _, r := range h.Oracle {
		if r.NS <= next.NS {
			out.Oracle = append(out.Oracle, r)
		}
	}
	out.Settled = nil
	for _, ns := range h.Settled {
		if ns <= next.NS {
			out.Settled = append(out.Settled, ns)
		}
	}
	for j := range out.Attempts {
		if out.Attempts[j].Complete > next.NS {
			out.Attempts = reopen(out.Attempts, next.NS)
			break
		}
	}
	return &out
}

// reopen copies attempts, making those completed after end open again.
func reopen(attempts []Attempt, end int64) []Attempt {
	out := append([]Attempt(nil), attempts...)
	for j := range out {
		if a := &out[j]; a.Complete > end {
			a.Complete, a.Outcome, a.HasResp, a.Status, a.Error = -1, Info, false, 0, ""
			a.RespHash, a.RespLen, a.RespPreview, a.RespHeaders = 0, 0, "", nil
		}
	}
	return out
}

// OpenUntil returns when attempt a may have stopped running on the server:
// its completion, except for an attempt that ended info (a timeout, a
// reset), whose server-side work may have gone on after the client gave
// up — it is held open until the first settle that followed it (a settled
// event), or the end of the history when none did. An attempt without a
// completion is open until the end, as [Attempt.End] says.
func (h *History) OpenUntil(a *Attempt) int64 {
	if a.Complete < 0 {
		return h.End
	}
	if a.Outcome != Info || len(h.Settled) == 0 {
		return a.Complete
	}
	for _, ns := range h.Settled {
		if ns >= a.Complete {
			return ns
		}
	}
	return a.Complete
}
