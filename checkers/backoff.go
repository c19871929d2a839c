package checkers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "backoff", New: Backoff, Suites: map[string]int{SuiteClient: 7}})
}

// The thresholds of backoff, those the corpus's ground truth is measured
// with (examples/clients/truth_test.go).
const (
	// lockstepSamples is how many intents one fault must hit before their
	// retry delays are compared.
	lockstepSamples = 8
	// lockstepSpread is the interquartile range of those delays under
	// which they are in lockstep (or lockstepShare of their median, when
	// larger): the scheduling noise of a loaded machine, not jitter. A
	// loaded machine also bunches the times a proxy records, narrowing a
	// jittered client's spread of short waits to 10 ms: the floor is 5 ms.
	// On the corpus run through idemchaos (12 clients × 3 seeds, twice,
	// with the machine loaded) the jittered clients' closest retry came at
	// 2× this threshold and the no-jitter libraries' at 0.8×; at 5 % the
	// jittered ones came within 1.2×.
	lockstepSpread = 5 * time.Millisecond
	lockstepShare  = 0.03
	// growthEnd is how much longer than the first the last wait must be
	// when there are at least three; a wait below half the longest before
	// it starts the backoff over.
	growthEnd = 1.5
)

// Backoff returns the checker of "backoff", a client invariant: the waits
// between an answer and the intent's next attempt grow, and intents hit by
// the same fault do not retry in lockstep (when the client contract's
// jitter is "required", the default). Waits dictated by Retry-After are
// left out. Growth is judged on the median wait before each retry across
// the intents (the n-th retry of every intent together), so that jitter
// and a loaded machine's noise do not decide it; a wait shorter than the
// contract's min_backoff_ms is a violation of its intent.
func Backoff(opts ...Option) Checker { return backoff{newConfig(opts)} }

type backoff struct{ cfg config }

var _ Checker = backoff{}

func (backoff) Name() string { return "backoff" }

func (c backoff) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

// waitAfter returns the wait between attempt prev's answer and the next
// attempt a, and whether it is the client's own choice: not when prev
// never completed or its answer asked for a delay.
func waitAfter(prev, a *history.Attempt) (time.Duration, bool) {
	if !prev.Done() || prev.RetryAfterMS > 0 {
		return 0, false
	}
	return time.Duration(a.Invoke - prev.Complete), true
}

func (c backoff) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	if why := noIntents(h); why != "" {
		return finish(r, h, why)
	}
	cc := c.cfg.clientContract(h)
	cv := ix.client()
	var waits [][]time.Duration // by retry: waits[n-1] before the n-th retry
	longest := -1               // the intent with the most attempts, to point at
	for g := range cv.intents {
		ci := &cv.intents[g]
		if len(ci.attempts) < 2 {
			continue
		}
		r.Checked++
		if longest < 0 || len(ci.attempts) > len(cv.intents[longest].attempts) {
			longest = g
		}
		short := false
		for j := 1; j < len(ci.attempts); j++ {
			prev, a := &h.Attempts[ci.attempts[j-1]], &h.Attempts[ci.attempts[j]]
			w, own := waitAfter(prev, a)
			if !own {
				continue
			}
			for len(waits) < j {
				waits = append(waits, nil)
			}
			waits[j-1] = append(waits[j-1], w)
			if cc.MinBackoff > 0 && w < cc.MinBackoff-time.Millisecond && !short {
				short = true
				v := ci.violation(h, c.Name(), ci.attempts[j-1:j+1])
				v.Explanation = fmt.Sprintf("intent %s's attempt %d (op %d) came %s after attempt %d (op %d) ended with %s, where the client contract promises at least %s between attempts.",
					ci.id, a.Number, a.Op, ms(w), prev.Number, prev.Op, ending(prev), ms(cc.MinBackoff))
				v.Cause = "the retry delay is shorter than the declared minimum (a zero or default delay, or a backoff that starts too low)"
				r.Violations = append(r.Violations, v)
			}
		}
	}
	if v, bad := c.growth(h, cv, waits, longest); bad {
		r.Violations = append(r.Violations, v)
	}
	if cc.Jitter != "optional" {
		r.Violations = append(r.Violations, c.lockstep(h, cv)...)
	}
	return finish(r, h, "")
}

// growth judges the median wait before each retry across the intents.
func (c backoff) growth(h *history.History, cv *clientView, waits [][]time.Duration, longest int) (Violation, bool) {
	type med struct {
		retry int
		m     time.Duration
		n     int
	}
	var meds []med
	for i, w := range waits {
		if len(w) < 2 {
			continue
		}
		slices.Sort(w)
		meds = append(meds, med{i + 1, w[len(w)/2], len(w)})
	}
	if len(meds) == 0 {
		return Violation{}, false
	}
	point := func() Violation {
		ci := &cv.intents[longest]
		v := ci.violation(h, c.Name(), ci.attempts)
		return v
	}
	list := func() string {
		parts := make([]string, len(meds))
		for i, m := range meds {
			parts[i] = fmt.Sprintf("%s before retry %d (%d intents)", ms(m.m), m.retry, m.n)
		}
		return strings.Join(parts, ", ")
	}
	var top med
	for i, m := range meds {
		if i > 0 && m.m < top.m/2 {
			v := point()
			v.Explanation = fmt.Sprintf("the backoff starts over: the median wait before retry %d was %s after a median wait of %s before retry %d (median waits: %s); each wait must be at least as long as half the longest before it.",
				m.retry, ms(m.m), ms(top.m), top.retry, list())
			v.Cause = "layered retries: a retry loop around a client that already retries restarts its backoff from the shortest delay on every round (and multiplies its attempts); keep one retry loop"
			return v, true
		}
		if m.m > top.m {
			top = m
		}
	}
	if first, last := meds[0], meds[len(meds)-1]; len(meds) >= 3 && float64(last.m) < growthEnd*float64(first.m) {
		v := point()
		v.Explanation = fmt.Sprintf("the waits between attempts do not grow: median waits %s; a client must back off, each wait longer than the last, so that its retries do not keep an overloaded upstream down.", list())
		v.Cause = "a fixed delay between retries (or Retry-After ignored in favour of a constant): back off exponentially, with jitter"
		return v, true
	}
	return Violation{}, false
}

// hitKey names the intents one fault hit in one step: the fault kind of a
// fault event aimed at the attempt, else the proxy's answer.
type hitKey struct {
	step int
	what string
}

// lockstep finds the faults that hit enough intents in one step whose
// retries after the hit came in lockstep: for some n, the n-th waits after
// each intent's first hit spread less than noise.
func (c backoff) lockstep(h *history.History, cv *clientView) []Violation {
	kinds := make(map[int64]string)
	for _, f := range h.Faults {
		if f.Op != 0 && f.Action == "fire" {
			if _, ok := kinds[f.Op]; !ok {
				kinds[f.Op] = "fault " + f.Kind
			}
		}
	}
	type sample struct {
		wait      time.Duration
		intent    int32
		hit, next int32
	}
	// groups[k][n] are the n-th waits after the first hit of the intents
	// that fault k hit.
	groups := map[hitKey][][]sample{}
	var order []hitKey
	stepOf := stepFinder(h)
	for g := range cv.intents {
		ci := &cv.intents[g]
		var seen map[hitKey]bool
		for j := 0; j+1 < len(ci.attempts); j++ {
			a := &h.Attempts[ci.attempts[j]]
			what, ok := kinds[a.Op]
			if !ok && !a.Proxied {
				continue
			}
			if !ok {
				what = "the fault proxy's " + statusOf(a)
			}
			k := hitKey{stepOf(ci.attempts[j]), what}
			if seen[k] {
				continue
			}
			if seen == nil {
				seen = map[hitKey]bool{}
			}
			seen[k] = true
			if groups[k] == nil {
				order = append(order, k)
				groups[k] = [][]sample{}
			}
			for n := 0; j+n+1 < len(ci.attempts); n++ {
				w, own := waitAfter(&h.Attempts[ci.attempts[j+n]], &h.Attempts[ci.attempts[j+n+1]])
				if !own {
					continue
				}
				for len(groups[k]) <= n {
					groups[k] = append(groups[k], nil)
				}
				groups[k][n] = append(groups[k][n], sample{w, int32(g), ci.attempts[j+n], ci.attempts[j+n+1]})
			}
		}
	}
	var out []Violation
	for _, k := range order {
		for n, s := range groups[k] {
			if len(s) < lockstepSamples {
				continue
			}
			w := make([]time.Duration, len(s))
			for i := range s {
				w[i] = s[i].wait
			}
			slices.Sort(w)
			m := w[len(w)/2]
			iqr := w[len(w)*3/4] - w[len(w)/4]
			if iqr >= max(lockstepSpread, time.Duration(lockstepShare*float64(m))) {
				continue
			}
			ci := &cv.intents[s[0].intent]
			var idx []int32
			for _, x := range s {
				idx = append(idx, x.hit, x.next)
			}
			slices.Sort(idx)
			v := ci.violation(h, c.Name(), idx)
			v.Intent, v.Key = "", ""
			where := ""
			if len(h.Steps) > 0 {
				where = fmt.Sprintf(" in step %q", h.Steps[k.step].Name)
			}
			v.Explanation = fmt.Sprintf("%d intents hit by %s%s retried in lockstep: their retry %d after the hit came a median %s after the answer before it, the middle half of them within %s of each other; clients one outage hits must spread their retries, or they all hit the recovering upstream at once.",
				len(s), k.what, where, n+1, ms(m), ms(iqr))
			v.Cause = "no jitter: every client waits exactly the same delay (a fixed or purely exponential backoff); add random jitter to each wait"
			out = append(out, v)
			break
		}
	}
	return out
}

// stepFinder returns the step of an attempt (by its index in h.Attempts).
func stepFinder(h *history.History) func(i int32) int {
	return func(i int32) int {
		s := 0
		for s+1 < len(h.Steps) && int(i) >= h.Steps[s+1].Attempts {
			s++
		}
		return s
	}
}
