package checkers

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// Checker judges one invariant over a history and the effects the system
// produced. Check is pure: no I/O, linear time.
type Checker interface {
	// Name is the invariant's name from DESIGN §4, e.g. "exactly-once".
	Name() string
	// Check judges the history. effects are usually h.Effects; a harness
	// that read them from an oracle separately may pass its own.
	Check(h *history.History, effects []history.Effect) Result
}

// Verdict is the outcome of a check. Like porcupine's, it has three values,
// and Unknown is never reported as a pass.
type Verdict int

// The three verdicts of a check, ordered so that the larger value is the
// worse one, and the fourth outcome of a whole history ([Judge]): the
// harness could not do its job, which outranks any violation, since what
// looks like one may be the environment's doing.
const (
	Pass Verdict = iota
	Unknown
	Violated
	EnvironmentError
)

// String returns "pass", "unknown", "violation" or "environment-error".
func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Violated:
		return "violation"
	case EnvironmentError:
		return "environment-error"
	}
	return "unknown"
}

// Violation is one broken instance of an invariant, said in plain words.
type Violation struct {
	Invariant string
	Tenant    string
	Method    string
	Path      string
	Key       string
	Intent    string
	// Ops are the attempts involved, in the order they were invoked.
	Ops []int64
	// Explanation says in one sentence what happened and what should have.
	Explanation string
	// Cause names the known pitfall the shape of the violation points to,
	// when it points to one (see the seed article's symptom → cause table).
	Cause string
	// Setup says the violation is a setup problem of the target, not of
	// its idempotency (the service did not accept connections: a listen
	// backlog too small for the traffic). A step whose every violation is
	// one is nothing to judge, its cause the reason ([Decide]).
	Setup bool `json:",omitempty"`
}

// String returns the explanation followed by the likely cause.
func (v Violation) String() string {
	if v.Cause == "" {
		return v.Explanation
	}
	return v.Explanation + " Likely cause: " + v.Cause + "."
}

// Result is what a check found.
type Result struct {
	Name    string
	Verdict Verdict
	// Violations are sorted by the first op involved.
	Violations []Violation
	// Reason says why the verdict is unknown, or notes what was not checked.
	Reason string
	// Checked counts what was examined (intents, keys or responses).
	Checked int
	// Results holds the parts of a composite result made by [All].
	Results []Result
}

// Failures returns the non-passing results of a composite, numbered for
// humans ("check 2/5 replay-identical: ..."), or of r itself.
func (r Result) Failures() []string {
	parts := r.Results
	if len(parts) == 0 {
		parts = []Result{r}
	}
	var out []string
	if len(r.Results) > 0 && r.Reason != "" {
		// A verdict of the whole (see Judge): its reason comes first, and
		// an environment error is all there is to say.
		out = append(out, r.Verdict.String()+": "+r.Reason)
		if r.Verdict == EnvironmentError {
			return out
		}
	}
	for i, p := range parts {
		if p.Verdict == Pass {
			continue
		}
		head := fmt.Sprintf("check %d/%d %s: %s", i+1, len(parts), p.Name, p.Verdict)
		if p.Verdict == Unknown || p.Verdict == EnvironmentError {
			out = append(out, head+": "+p.Reason)
			continue
		}
		for _, v := range p.Violations {
			out = append(out, head+": "+v.String())
		}
	}
	return out
}

// Option sets a parameter where services legitimately differ.
type Option func(*config)

type config struct {
	contract Contract
	// globals, when set, are the facts of the whole history that a part of
	// it checked alone cannot see ([WithGlobals]).
	globals *Globals
	// client, when set, is the client contract that replaces the one a
	// client history's meta event carries ([WithClientContract]).
	client *ClientContract
}

func newConfig(opts []Option) config {
	c := config{contract: DefaultContract().filled()}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// profile is the status-code contract in force.
func (c *config) profile() Profile { return c.contract.Profile }

// WithProfile sets the status-code contract (default ietf).
func WithProfile(p Profile) Option { return func(c *config) { c.contract.Profile = p } }

// WithHeaders sets the only response headers that must be identical on a
// replay, besides status and body. Without it, every header the first
// response carried is compared except [Contract.ReplayIgnore]. The headers
// must also be kept when the history is loaded ([Contract.LoadOptions]).
func WithHeaders(names ...string) Option {
	return func(c *config) { c.contract.ReplayHeaders = append([]string{}, names...) }
}

// WithDecisionBound sets how long after faults heal a retried key may stay
// undecided (default 5s).
func WithDecisionBound(d time.Duration) Option {
	return func(c *config) { c.contract.DecisionBound = d }
}

// WithRetentionGap sets the gap between sequential attempts of one key past
// which a duplicate is blamed on record retention (default 30s).
func WithRetentionGap(d time.Duration) Option { return func(c *config) { c.contract.RetentionGap = d } }

// WithStates sets the declared order of the resources' states, first to
// last, that forward-only judges by (a state must never move back).
func WithStates(states ...string) Option {
	return func(c *config) { c.contract.States = append([]string{}, states...) }
}

// WithFingerprint sets how "the same payload" is judged: strict,
// canonical or either (see [Contract.Fingerprint]).
func WithFingerprint(mode string) Option { return func(c *config) { c.contract.Fingerprint = mode } }

// Default returns all seven checkers with the same options.
func Default(opts ...Option) Checker {
	cs := make([]Checker, 0, len(Names()))
	for _, n := range Names() {
		c, _ := ByName(n, opts...)
		cs = append(cs, c)
	}
	return All(cs...)
}

// All composes checkers: it runs every one and joins their results. The
// composite verdict is the worst of the parts.
func All(cs ...Checker) Checker { return all(cs) }

type all []Checker

var _ Checker = all(nil)

func (a all) Name() string {
	names := make([]string, len(a))
	for i, c := range a {
		names[i] = c.Name()
	}
	return strings.Join(names, "+")
}

func (a all) Check(h *history.History, effects []history.Effect) Result {
	return a.checkIndex(newIndex(h, effects))
}

// WithDeadline returns c with a time budget for one Check: the checks that
// compare the attempts of each key stop when it runs out, and call the keys
// they did not reach unknown, with the reason. The budget is measured from
// the start of Check.
func WithDeadline(c Checker, d time.Duration) Checker { return deadlined{c, d} }

type deadlined struct {
	c Checker
	d time.Duration
}

func (d deadlined) Name() string { return d.c.Name() }

func (d deadlined) Check(h *history.History, effects []history.Effect) Result {
	ix := newIndex(h, effects)
	ix.deadline, ix.budget = time.Now().Add(d.d), d.d
	switch c := d.c.(type) {
	case all:
		return c.checkIndex(ix)
	case indexed:
		return c.check(ix).Result
	}
	return d.c.Check(h, effects)
}

func (a all) checkIndex(ix *index) Result { return a.checkOn(ix, runtime.GOMAXPROCS(0)) }

// checkOn runs a's checks on up to workers goroutines.
func (a all) checkOn(ix *index, workers int) Result {
	r := Result{Name: a.Name()}
	for _, p := range a.partsOn(ix, workers) {
		r.addPart(p.Result)
	}
	return r
}

// partsOn runs a's checks on up to workers goroutines, each result with
// what a merge of parts needs ([CheckParts]), in a's order.
func (a all) partsOn(ix *index, workers int) []Part {
	h, effects := ix.h, ix.effects
	parts := make([]Part, len(a))
	run := func(i int) {
		if ic, ok := a[i].(indexed); ok {
			parts[i] = ic.check(ix)
		} else {
			parts[i] = Part{Result: a[i].Check(h, effects)}
		}
	}
	// The checks are independent once the index is built (it builds each
	// part once, under a lock): with more than one processor they run
	// side by side, and their results are joined in order, as in series.
	if workers = min(workers, len(a)); workers > 1 {
		order := runOrder(a)
		var next atomic.Int32
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					j := int(next.Add(1)) - 1
					if j >= len(order) {
						return
					}
					run(order[j])
				}
			})
		}
		wg.Wait()
	} else {
		for i := range a {
			run(i)
		}
	}
	return parts
}

// runOrder returns the indices of a's checks in the order they are started.
func runOrder(a all) []int {
	order := make([]int, len(a))
	rank := make([]int, len(a))
	for i, c := range a {
		order[i], rank[i] = i, startRank(c.Name())
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(rank[x], rank[y]) })
	return order
}

// finish sorts the violations and settles the verdict: violations are
// definite; otherwise a truncated history or an explicit reason is unknown.
// A run that was interrupted is unknown whatever it shows: its traffic and
// its effects were cut off, so what looks like a violation may be neither.
func finish(r Part, h *history.History, unknown string) Part {
	// Violations naming no attempt (an intent whose client sent nothing)
	// tie on op 0: by intent, so that their order does not depend on how
	// a history was cut into parts.
	sort.SliceStable(r.Violations, func(i, j int) bool {
		a, b := &r.Violations[i], &r.Violations[j]
		if fa, fb := firstOp(*a), firstOp(*b); fa != fb {
			return fa < fb
		}
		return len(a.Ops) == 0 && len(b.Ops) == 0 && a.Intent < b.Intent
	})
	switch {
	case h.Interrupted != "":
		r.Verdict = Unknown
		r.Reason = fmt.Sprintf("the run was interrupted (%s): its history is partial", h.Interrupted)
		if n := len(r.Violations); n > 0 {
			r.Reason += fmt.Sprintf("; %d possible violation(s) not judged", n)
			r.Violations = nil
		}
	case len(r.Violations) > 0:
		r.Verdict = Violated
	case unknown != "":
		r.Verdict, r.Reason = Unknown, unknown
	case h.Truncated:
		r.Verdict, r.Reason = Unknown, "the history is truncated (its last line was cut off), so events may be missing"
	default:
		r.Verdict = Pass
	}
	return r
}

// early ends a check that cannot judge the history (it lacks the facts the
// check reads) with the reason why, kept for [Merge]: every part of such a
// history says the same.
func early(r Part, h *history.History, why string) Part {
	r.t.early = why
	return finish(r, h, why)
}

func firstOp(v Violation) int64 {
	if len(v.Ops) == 0 {
		return 0
	}
	return v.Ops[0]
}
