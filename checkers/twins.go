package checkers

import (
	"slices"

	"github.com/idemchaos/idemchaos/history"
)

// twinQuery is what a lost-write violation found in a part of a history
// asks of the whole: an intent that sent the same body to the same
// endpoint, in another unit, and executed.
type twinQuery struct {
	scope bodyScope
	unit  string // the first intent of the violation's unit
}

// twinAsk is a lost-write violation's question, kept beside the result
// ([Part]) rather than in it: the violation is found by its identity, as
// the violations of a part are sorted and merged after it is asked.
type twinAsk struct {
	v violationID
	q twinQuery
}

// violationID tells a violation from the others of its part: no two of
// exactly-once's name the same first op with the same explanation.
type violationID struct {
	op          int64
	explanation string
}

func idOf(v *Violation) violationID { return violationID{firstOp(*v), v.Explanation} }

// TwinScope is a tenant, an endpoint and the hash of a request body: the
// scope of intents that sent byte-identical requests.
type TwinScope struct {
	Tenant, Method, Path string
	Body                 uint64
}

// Twin is an intent whose unit executed, by the body its first attempt
// sent ([ExecutedTwins]).
type Twin struct {
	Scope  TwinScope
	Intent string
	Unit   string // the first intent of its unit
	// Attempt is the index of the intent's first attempt in the history it
	// was found in; Order, set by the caller, places it in the whole
	// history (its invoke line).
	Attempt int
	Order   int64
}

// TwinQueries returns the body scopes the lost-write violations of p, a
// part of a history, ask about.
func TwinQueries(p Part) map[TwinScope]bool {
	q := map[TwinScope]bool{}
	for _, t := range p.twins {
		q[t.q.scope] = true
	}
	return q
}

// ExecutedTwins returns the intents of h whose unit executed and whose
// first attempt's body scope is in want, judged as exactly-once judges.
func ExecutedTwins(h *history.History, effects []history.Effect, want map[TwinScope]bool, opts ...Option) []Twin {
	cfg := newConfig(opts)
	at := attribute(newIndex(h, effects), cfg.profile(), &cfg.contract)
	var out []Twin
	for si := range at.intents {
		st := &at.intents[si]
		a := &h.Attempts[st.first]
		sc := TwinScope{a.Tenant, a.Method, a.Path, a.ReqHash}
		if u := at.unitOf(st); want[sc] && at.executed(u) {
			out = append(out, Twin{Scope: sc, Intent: st.id(h), Unit: at.firstOf(u).id(h), Attempt: int(st.first)})
		}
	}
	return out
}

// ResolveTwins gives the lost-write violations of p the cause the whole
// history shows: the first executed twin in another unit, by Order. It
// clears every query, so p merges as if its history had no other parts.
func ResolveTwins(p Part, twins []Twin) Part {
	if len(p.twins) == 0 {
		return p
	}
	slices.SortStableFunc(twins, func(a, b Twin) int { return int(a.Order - b.Order) })
	ask := make(map[violationID]twinQuery, len(p.twins))
	for _, t := range p.twins {
		ask[t.v] = t.q
	}
	vs := slices.Clone(p.Violations)
	for i := range vs {
		v := &vs[i]
		q, ok := ask[idOf(v)]
		if !ok {
			continue
		}
		for _, t := range twins {
			if t.Scope == q.scope && t.Unit != q.unit {
				v.Cause = twinCause(t.Intent)
				break
			}
		}
	}
	p.Violations, p.twins = vs, nil
	return p
}
