package checkers

import (
	"cmp"
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
// left out. Growth is judged on the typical wait before each retry across
// the intents (the n-th retry of every intent together: [typicalWait]),
// so that jitter and a loaded machine's noise do not decide it; a wait shorter than the
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
		return early(r, h, why)
	}
	cc := c.cfg.clientContract(h)
	cv := ix.client()
	t := &backoffTally{Lockstep: cc.Jitter != "optional"}
	for g := range cv.intents {
		ci := &cv.intents[g]
		if len(ci.attempts) < 2 {
			continue
		}
		r.Checked++
		// The intent with the most attempts, to point at: the first sent
		// of those with as many, however the history is cut into parts.
		if n, first := len(ci.attempts), h.Attempts[ci.attempts[0]].Op; n > t.Longest.N || (n == t.Longest.N && first < t.Longest.First) {
			t.Longest = longestIntent{N: n, First: first, V: ci.violation(h, c.Name(), ci.attempts)}
		}
		short := false
		for j := 1; j < len(ci.attempts); j++ {
			prev, a := &h.Attempts[ci.attempts[j-1]], &h.Attempts[ci.attempts[j]]
			w, own := waitAfter(prev, a)
			if !own {
				continue
			}
			for len(t.Waits) < j {
				t.Waits = append(t.Waits, nil)
			}
			t.Waits[j-1] = append(t.Waits[j-1], w)
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
	if t.Lockstep {
		t.Hits = lockstepSamplesOf(h, cv)
	}
	r.t.backoff = t
	if c.cfg.globals != nil {
		// One part of the history: growth and lockstep compare intents
		// across parts, the merge's to judge.
		return finish(r, h, "")
	}
	r.Violations = append(r.Violations, t.judge(c.Name())...)
	return finish(r, h, "")
}

// backoffTally is what backoff judges across intents: the waits before
// each retry, the intent to point at, and the retries after each fault
// that hit several intents. A part of a history keeps it for [Merge],
// which joins the parts' and judges them as the whole history's.
type backoffTally struct {
	Waits    [][]time.Duration // by retry: waits[n-1] before the n-th retry
	Longest  longestIntent
	Hits     []hitGroup
	Lockstep bool // the contract requires jitter
}

// longestIntent is the intent with the most attempts (n 0: none yet).
type longestIntent struct {
	N     int
	First int64 // the op of its first attempt
	V     Violation
}

// hitGroup is the retries of the intents one fault hit in one step:
// byN[n] are the n-th waits after each intent's first hit.
type hitGroup struct {
	Key   hitKey
	Where string
	ByN   [][]lockSample
}

// lockSample is one intent's wait after a hit, and where to point.
type lockSample struct {
	Wait                 time.Duration
	Hit, Next            int64 // ops
	Tenant, Method, Path string
}

// mergeParts joins the parts' waits and hits and judges growth and
// lockstep over the whole history.
func (c backoff) mergeParts(r Part, parts []Part, h *history.History) Part {
	if r.t.early != "" {
		return finish(r, h, r.t.early)
	}
	t := &backoffTally{}
	byKey := map[hitKey]int{}
	for _, p := range parts {
		pt := p.t.backoff
		if pt == nil {
			continue
		}
		t.Lockstep = t.Lockstep || pt.Lockstep
		for i, w := range pt.Waits {
			for len(t.Waits) <= i {
				t.Waits = append(t.Waits, nil)
			}
			t.Waits[i] = append(t.Waits[i], w...)
		}
		if l := pt.Longest; l.N > t.Longest.N || (l.N == t.Longest.N && l.N > 0 && l.First < t.Longest.First) {
			t.Longest = l
		}
		for _, g := range pt.Hits {
			i, ok := byKey[g.Key]
			if !ok {
				i = len(t.Hits)
				byKey[g.Key] = i
				t.Hits = append(t.Hits, hitGroup{Key: g.Key, Where: g.Where})
			}
			for n, s := range g.ByN {
				for len(t.Hits[i].ByN) <= n {
					t.Hits[i].ByN = append(t.Hits[i].ByN, nil)
				}
				t.Hits[i].ByN[n] = append(t.Hits[i].ByN[n], s...)
			}
		}
	}
	r.Violations = append(r.Violations, t.judge(c.Name())...)
	return finish(r, h, "")
}

// judge judges growth and lockstep over the tally.
func (t *backoffTally) judge(name string) []Violation {
	var out []Violation
	if v, bad := t.growth(); bad {
		out = append(out, v)
	}
	if t.Lockstep {
		out = append(out, t.inLockstep(name)...)
	}
	return out
}

// growth judges the median wait before each retry across the intents.
func (t *backoffTally) growth() (Violation, bool) {

	var meds []med
	for i, w := range t.Waits {
		if len(w) < 2 {
			continue
		}
		slices.Sort(w)
		meds = append(meds, med{i + 1, typicalWait(w), len(w)})
	}
	if len(meds) == 0 {
		return Violation{}, false
	}
	point := func() Violation {
		v := t.Longest.V
		v.Ops = slices.Clone(v.Ops)
		return v
	}
	heading := func() string {
		for _, m := range meds {
			if m.n >= lockstepSamples {
				return "typical waits"
			}
		}
		return "median waits"
	}
	list := func() string {
		parts := make([]string, len(meds))
		for i, m := range meds {
			q := ""
			if m.n >= lockstepSamples {
				q = " lower quartile"
			}
			parts[i] = fmt.Sprintf("%s%s before retry %d (%d intents)", ms(m.m), q, m.retry, m.n)
		}
		return strings.Join(parts, ", ")
	}
	var top med
	for i, m := range meds {
		if i > 0 && m.m < top.m/2 {
			v := point()
			v.Explanation = fmt.Sprintf("the backoff starts over: the %s before retry %d was %s after a %s of %s before retry %d (%s: %s); each wait must be at least as long as half the longest before it.",
				m.what(), m.retry, ms(m.m), top.what(), ms(top.m), top.retry, heading(), list())
			v.Cause = "layered retries: a retry loop around a client that already retries restarts its backoff from the shortest delay on every round (and multiplies its attempts); keep one retry loop"
			return v, true
		}
		if m.m > top.m {
			top = m
		}
	}
	if first, last := meds[0], meds[len(meds)-1]; len(meds) >= 3 && float64(last.m) < growthEnd*float64(first.m) {
		v := point()
		v.Explanation = fmt.Sprintf("the waits between attempts do not grow: %s %s; a client must back off, each wait longer than the last, so that its retries do not keep an overloaded upstream down.", heading(), list())
		v.Cause = "a fixed delay between retries (or Retry-After ignored in favour of a constant): back off exponentially, with jitter"
		return v, true
	}
	return Violation{}, false
}

// typicalWait is the wait a retry round stands for, from its sorted waits:
// the lower quartile once there are [lockstepSamples] of them, the median
// below that. Scheduling noise only adds delay, and a stall of a loaded
// machine adds it to many intents at one moment: half the crowd woken
// 200 ms late moves the median of a 25–75 ms first retry past the second
// retry's, and a correct backoff reads as one that does not grow. The
// lower quartile stays with what the client chose. A few waits keep the
// median: the least of two fully jittered waits says little.
func typicalWait(sorted []time.Duration) time.Duration {
	if len(sorted) >= lockstepSamples {
		return sorted[len(sorted)/4]
	}
	return sorted[len(sorted)/2]
}

// med is one retry round's typical wait, over n intents.
type med struct {
	retry int
	m     time.Duration
	n     int
}

// what names the measure m is.
func (m med) what() string {
	if m.n >= lockstepSamples {
		return "lower-quartile wait"
	}
	return "median wait"
}

// hitKey names the intents one fault hit in one step: the fault kind of a
// fault event aimed at the attempt, else the proxy's answer.
type hitKey struct {
	Step int
	What string
}

// lockstepSamplesOf gathers, for each fault that hit intents in a step,
// the waits of each intent's retries after its first hit.
func lockstepSamplesOf(h *history.History, cv *clientView) []hitGroup {
	kinds := make(map[int64]string)
	for _, f := range h.Faults {
		if f.Op != 0 && f.Action == "fire" {
			if _, ok := kinds[f.Op]; !ok {
				kinds[f.Op] = "fault " + f.Kind
			}
		}
	}
	var groups []hitGroup
	byKey := map[hitKey]int{}
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
			gi, ok := byKey[k]
			if !ok {
				gi = len(groups)
				byKey[k] = gi
				where := ""
				if len(h.Steps) > 0 {
					where = fmt.Sprintf(" in step %q", h.Steps[k.Step].Name)
				}
				groups = append(groups, hitGroup{Key: k, Where: where})
			}
			first := &h.Attempts[ci.attempts[0]]
			for n := 0; j+n+1 < len(ci.attempts); n++ {
				prev, next := &h.Attempts[ci.attempts[j+n]], &h.Attempts[ci.attempts[j+n+1]]
				w, own := waitAfter(prev, next)
				if !own {
					continue
				}
				grp := &groups[gi]
				for len(grp.ByN) <= n {
					grp.ByN = append(grp.ByN, nil)
				}
				grp.ByN[n] = append(grp.ByN[n], lockSample{w, prev.Op, next.Op, ci.tenant, first.Method, first.Path})
			}
		}
	}
	return groups
}

// inLockstep finds the faults that hit enough intents in one step whose
// retries after the hit came in lockstep: for some n, the n-th waits after
// each intent's first hit spread less than noise. The violations come in
// the order of each fault's first hit, pointing at the intent hit first.
func (t *backoffTally) inLockstep(name string) []Violation {
	type found struct {
		first int64
		key   hitKey
		v     Violation
	}
	var out []found
	for _, g := range t.Hits {
		for n, s := range g.ByN {
			if len(s) < lockstepSamples {
				continue
			}
			w := make([]time.Duration, len(s))
			ops := make([]int64, 0, 2*len(s))
			lead := 0
			for i := range s {
				w[i] = s[i].Wait
				ops = append(ops, s[i].Hit, s[i].Next)
				if s[i].Hit < s[lead].Hit {
					lead = i
				}
			}
			slices.Sort(w)
			m := w[len(w)/2]
			iqr := w[len(w)*3/4] - w[len(w)/4]
			if iqr >= max(lockstepSpread, time.Duration(lockstepShare*float64(m))) {
				continue
			}
			slices.Sort(ops)
			v := Violation{Invariant: name, Tenant: s[lead].Tenant, Method: s[lead].Method, Path: s[lead].Path, Ops: ops}
			v.Explanation = fmt.Sprintf("%d intents hit by %s%s retried in lockstep: their retry %d after the hit came a median %s after the answer before it, the middle half of them within %s of each other; clients one outage hits must spread their retries, or they all hit the recovering upstream at once.",
				len(s), g.Key.What, g.Where, n+1, ms(m), ms(iqr))
			v.Cause = "no jitter: every client waits exactly the same delay (a fixed or purely exponential backoff); add random jitter to each wait"
			out = append(out, found{s[lead].Hit, g.Key, v})
			break
		}
	}
	slices.SortFunc(out, func(a, b found) int {
		return cmp.Or(cmp.Compare(a.first, b.first), cmp.Compare(a.key.Step, b.key.Step), strings.Compare(a.key.What, b.key.What))
	})
	vs := make([]Violation, len(out))
	for i := range out {
		vs[i] = out[i].v
	}
	return vs
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
