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

// TwinScope is a tenant, an endpoint and the hash of a request body.
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

// TwinQueries returns the body scopes the lost-write violations of r,
// merged from parts, ask about (none for a result checked whole).
func TwinQueries(r Result) map[TwinScope]bool {
	q := map[TwinScope]bool{}
	for _, p := range Leaves(r) {
		for _, v := range p.Violations {
			if v.twin != nil {
				q[v.twin.scope.exported()] = true
			}
		}
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

// ResolveTwins gives the lost-write violations of r the cause the whole
// history shows: the first executed twin in another unit, by Order. It
// clears every query, so r reads as a result checked whole.
func ResolveTwins(r Result, twins []Twin) Result {
	slices.SortStableFunc(twins, func(a, b Twin) int { return int(a.Order - b.Order) })
	fix := func(p *Result) {
		vs := slices.Clone(p.Violations)
		for i := range vs {
			v := &vs[i]
			if v.twin == nil {
				continue
			}
			for _, t := range twins {
				if t.Scope == v.twin.scope.exported() && t.Unit != v.twin.unit {
					v.Cause = twinCause(t.Intent)
					break
				}
			}
			v.twin = nil
		}
		p.Violations = vs
	}
	if len(r.Results) == 0 {
		fix(&r)
		return r
	}
	r.Results = slices.Clone(r.Results)
	r.Violations = nil
	for i := range r.Results {
		fix(&r.Results[i])
		r.Violations = append(r.Violations, r.Results[i].Violations...)
	}
	return r
}

func (b bodyScope) exported() TwinScope { return TwinScope{b.tenant, b.method, b.path, b.body} }
