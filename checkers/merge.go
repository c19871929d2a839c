package checkers

import (
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// Part is one checker's result over a part of a history checked alone
// ([WithGlobals]), with what [Merge] needs of it to give the result the
// checker gives on the whole: the counts behind its verdict and reason, and
// the questions its violations leave to the whole history. [Result]
// itself carries none of that: a check of a whole history has nothing to
// merge.
type Part struct {
	Result
	t tally
	// twins are the lost-write violations' questions to the whole history
	// (exactly-once: [TwinQueries], [ResolveTwins]).
	twins []twinAsk
}

// tally is what a check counted on the way to its verdict and reason: the
// numbers behind the sentence, which add up over the parts of a history.
// Each field is one checker's, read by that checker's merge (partMerger)
// in its own file.
type tally struct {
	early       string // an unknown reason decided before any key was judged
	noCrash     bool   // durable-ack: the history has no crash
	orphans     int    // exactly-once: effects that matched no attempt
	unread      bool   // exactly-once: effects_recorded was false
	unlearned   int    // exactly-once, repeat: refuse: intents that executed but never learned their answer
	refuse      int    // exactly-once: the contract's refusal status (0: none)
	undecidable int    // eventually-decided: keys that stopped retrying early
	bound       time.Duration
	left, keys  int // in-flight-conflict: keys the time budget left unchecked, of keys
	budget      time.Duration
	looseSeen   bool // reuse-rejected: a key rejected another payload
	// The client suite, over the intents of a part.
	client        bool // exactly-once: a client run's history
	unattributed  int  // exactly-once, client: effects attributed to no intent
	unknowns      int  // truthful-outcome: intents whose client said "unknown"
	silent        int  // truthful-outcome: intents with attempts and no belief
	forbidUnknown bool // truthful-outcome: the client contract forbids "unknown"
	attempts      int  // bounded: attempts of the intents
	intents       int  // bounded: intents that sent any
	global        int  // bounded: the global budget (0: none)
	backoff       *backoffTally
	// replay-identical, in a part: the first-hand successes' headers by
	// endpoint, and the marked replays to judge against all of them.
	endpoints map[endpoint]*endpointTally
	stripped  []strippedCandidates
	// bounded-redelivery, in a part: the messages redelivered and never
	// settled, and those never delivered, for the merge to judge whether
	// one blocked the queue.
	redelivered []redelivered
	undelivered []undelivered
}

// partMerger is the optional interface of a checker whose result over a
// whole history is more than the sum of its parts' (a reason from counts,
// a cause only the whole shows). Each implements it in its own file; a
// checker without it merges plainly: violations joined, verdict settled.
type partMerger interface {
	// mergeParts settles the verdict and reason of sum, the parts added up
	// ([sumParts]), over h, which holds only the whole history's
	// interruption and truncation.
	mergeParts(sum Part, parts []Part, h *history.History) Part
}

// Globals are the facts of a whole history that a check of one part of it
// (the keys of one partition) needs: eventually-decided judges a run of
// identical 5xx against every success and the failure rate of the run.
type Globals struct {
	// Successes are the completion times of every 2xx answer, sorted.
	Successes []int64
	// Answers counts the responses (ok events), Failures those with a 5xx.
	Answers, Failures int
	// Keys counts the idempotency scopes (tenant, method, path, key) that
	// carried a key.
	Keys int
	// Executed, when set, says whether a (tenant, key) has an effect in
	// the whole history (tenant-isolation's "each executed").
	Executed func(tenant, key string) bool
}

func (g *Globals) rate() failureRate {
	r := failureRate{keys: max(g.Keys, 1)}
	if g.Answers > 0 {
		r.p = float64(g.Failures) / float64(g.Answers)
	}
	return r
}

// WithGlobals gives the checks the facts of the whole history when they
// judge one part of it.
func WithGlobals(g *Globals) Option { return func(c *config) { c.globals = g } }

// Merge joins the results of one checker over disjoint parts of a history
// (see the partition package) into the result the checker gives on the
// whole: counts add up, violations are sorted by their first op, and the
// verdict and reason are settled again from the summed tallies. Interrupted
// and truncated are the whole history's: parts must be checked with both
// cleared, so that no part drops its violations.
func Merge(parts []Part, interrupted string, truncated bool) Result {
	if len(parts) == 0 {
		return Result{}
	}
	r := sumParts(parts)
	h := &history.History{Interrupted: interrupted, Truncated: truncated}
	if m, ok := mergerOf(r.Name); ok {
		return m.mergeParts(r, parts, h).Result
	}
	return finish(r, h, r.t.early).Result
}

// sumParts adds the parts up: checked counts, violations and tallies.
func sumParts(parts []Part) Part {
	r := Part{Result: Result{Name: parts[0].Name}}
	r.t = parts[0].t
	r.t.orphans, r.t.undecidable, r.t.left, r.t.keys, r.t.unlearned = 0, 0, 0, 0, 0
	r.t.unattributed, r.t.unknowns, r.t.silent, r.t.attempts, r.t.intents = 0, 0, 0, 0, 0
	for _, p := range parts {
		r.t.client = r.t.client || p.t.client
		r.t.unattributed += p.t.unattributed
		r.t.unknowns += p.t.unknowns
		r.t.silent += p.t.silent
		r.t.forbidUnknown = r.t.forbidUnknown || p.t.forbidUnknown
		r.t.attempts += p.t.attempts
		r.t.intents += p.t.intents
		r.t.global = max(r.t.global, p.t.global)
		r.Checked += p.Checked
		r.Violations = append(r.Violations, p.Violations...)
		r.t.orphans += p.t.orphans
		r.t.unlearned += p.t.unlearned
		r.t.refuse = max(r.t.refuse, p.t.refuse)
		r.t.undecidable += p.t.undecidable
		r.t.left += p.t.left
		r.t.keys += p.t.keys
		r.t.unread = r.t.unread || p.t.unread
		r.t.noCrash = r.t.noCrash && p.t.noCrash
		r.t.looseSeen = r.t.looseSeen || p.t.looseSeen
		if r.t.early == "" {
			r.t.early = p.t.early
		}
	}
	r.t.endpoints, r.t.stripped, r.t.backoff = nil, nil, nil
	return r
}

// mergerOf returns the registered checker of the name when it merges parts
// its own way.
func mergerOf(name string) (partMerger, bool) {
	checkersMu.RLock()
	reg, ok := registered[name]
	checkersMu.RUnlock()
	if !ok {
		return nil, false
	}
	m, ok := reg.New().(partMerger)
	return m, ok
}

// CheckParts judges a part of a history (checked with [WithGlobals]) with
// c, one [Part] for each checker c composes ([Leaves] order), each keeping
// what [Merge] needs of it. A checker of another package gives its plain
// result, which merges plainly.
func CheckParts(c Checker, h *history.History, effects []history.Effect) []Part {
	ix := newIndex(h, effects)
	if d, ok := c.(deadlined); ok {
		ix.deadline, ix.budget = time.Now().Add(d.d), d.d
		c = d.c
	}
	switch c := c.(type) {
	case all:
		return c.partsOn(ix, runtime.GOMAXPROCS(0))
	case indexed:
		return []Part{c.check(ix)}
	}
	return []Part{{Result: c.Check(h, effects)}}
}

// Combine joins the results of several checkers into one composite, as
// [All] does: the verdict is the worst of the parts.
func Combine(parts ...Result) Result {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.Name
	}
	r := Result{Name: strings.Join(names, "+")}
	for _, p := range parts {
		r.addPart(p)
	}
	return r
}

// addPart adds one checker's result to a composite: its violations and
// counts join the whole, and the worst verdict wins.
func (r *Result) addPart(p Result) {
	r.Results = append(r.Results, p)
	r.Violations = append(r.Violations, p.Violations...)
	r.Checked += p.Checked
	if p.Verdict > r.Verdict {
		r.Verdict = p.Verdict
	}
}

// Leaves returns the results of the single checkers in r: its parts when r
// is a composite, else r itself.
func Leaves(r Result) []Result {
	if len(r.Results) == 0 {
		return []Result{r}
	}
	return slices.Clone(r.Results)
}
