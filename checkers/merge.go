package checkers

import (
	"slices"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// tally is what a check counted on the way to its verdict and reason: the
// numbers behind the sentence, which add up over the parts of a history.
type tally struct {
	settle      settleKind
	early       string // an unknown reason decided before any key was judged
	noCrash     bool   // durable-ack: the history has no crash
	orphans     int    // exactly-once: effects that matched no attempt
	unread      bool   // exactly-once: effects_recorded was false
	undecidable int    // eventually-decided: keys that stopped retrying early
	bound       time.Duration
	left, keys  int // in-flight-conflict: keys the time budget left unchecked, of keys
	budget      time.Duration
	looseSeen   bool // reuse-rejected: a key rejected another payload
	// replay-identical, in a part: the first-hand successes' headers by
	// endpoint, and the marked replays to judge against all of them.
	endpoints map[endpoint]*endpointTally
	stripped  []strippedCandidates
}

type settleKind uint8

const (
	settlePlain settleKind = iota
	settleExactly
	settleDecided
	settleInFlightKind
	settleDurable
	settleReplay
)

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
func Merge(parts []Result, interrupted string, truncated bool) Result {
	if len(parts) == 0 {
		return Result{}
	}
	r := Result{Name: parts[0].Name}
	r.t = parts[0].t
	r.t.orphans, r.t.undecidable, r.t.left, r.t.keys = 0, 0, 0, 0
	for _, p := range parts {
		r.Checked += p.Checked
		r.Violations = append(r.Violations, p.Violations...)
		r.t.orphans += p.t.orphans
		r.t.undecidable += p.t.undecidable
		r.t.left += p.t.left
		r.t.keys += p.t.keys
		r.t.unread = r.t.unread || p.t.unread
		r.t.noCrash = r.t.noCrash && p.t.noCrash
		if r.t.early == "" {
			r.t.early = p.t.early
		}
	}
	for _, p := range parts {
		r.t.looseSeen = r.t.looseSeen || p.t.looseSeen
	}
	for i := range r.Violations {
		v := &r.Violations[i]
		if v.ifLoose != "" && r.t.looseSeen {
			v.Cause = v.ifLoose
		}
		v.ifLoose = ""
	}
	if r.t.settle == settleReplay {
		r.Violations = append(r.Violations, mergeStripped(r.Name, parts)...)
	}
	r.t.endpoints, r.t.stripped = nil, nil
	h := &history.History{Interrupted: interrupted, Truncated: truncated}
	switch r.t.settle {
	case settleExactly:
		if r.t.early != "" {
			return finish(r, h, r.t.early)
		}
		return settleExactlyOnce(r, h)
	case settleDecided:
		return settleEventuallyDecided(r, h)
	case settleInFlightKind:
		return settleInFlight(r, h)
	case settleDurable:
		return settleDurableAck(r, h)
	}
	return finish(r, h, "")
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
