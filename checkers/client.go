package checkers

import (
	"fmt"
	"slices"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// The client suite judges the caller, not the service: a history of a
// client run (meta mode "client") in which every attempt arrived on its
// intent's own proxy listener, so the intent of an attempt is ground truth
// however the client re-keys, and each intent's command ended with a belief.
// Each client invariant is one file that registers itself in
// [SuiteClient]; what they share — the attempts of every intent, its
// invocation and belief, the effects attributed to it, the client's
// contract — is here.

// ClientContract is what a client under test declares it keeps, where
// clients legitimately differ. A client run writes it into its history's
// meta event ("client_contract"); the client checks read it from there
// unless [WithClientContract] says otherwise.
type ClientContract struct {
	// Budget is the attempts allowed per intent, the first included (5).
	Budget int
	// GlobalBudget is the attempts allowed in the whole run; 0 means the
	// intents × Budget.
	GlobalBudget int
	// RetryStatuses are the statuses the client may retry.
	RetryStatuses []int
	// PermanentStatuses are the statuses after which the same request is
	// never re-sent as it is.
	PermanentStatuses []int
	// MinBackoff is the shortest wait the client promises between an
	// answer and its next attempt (0: none promised).
	MinBackoff time.Duration
	// Jitter is "required" (the default: clients hit by one outage must not
	// retry in lockstep) or "optional".
	Jitter string
	// Unknown is "allowed" (the default: "outcome unknown" is counted) or
	// "forbidden" (every unknown is a truthful-outcome violation).
	Unknown string
}

// DefaultClientContract is what the client checks judge by when a history
// says nothing: 5 attempts per intent, the seeds' retryable and permanent
// statuses, no minimum backoff, jitter required, unknown allowed.
func DefaultClientContract() ClientContract {
	return ClientContract{
		Budget:            5,
		RetryStatuses:     []int{408, 425, 429, 500, 502, 503, 504},
		PermanentStatuses: []int{400, 401, 403, 404, 422},
		Jitter:            "required",
		Unknown:           "allowed",
	}
}

// ClientContractFromMeta returns the client contract a history's meta event
// carries, with the defaults for what it does not say.
func ClientContractFromMeta(m *history.ClientContract) ClientContract {
	c := DefaultClientContract()
	if m == nil {
		return c
	}
	if m.Budget > 0 {
		c.Budget = m.Budget
	}
	c.GlobalBudget = m.GlobalBudget
	if m.RetryStatuses != nil {
		c.RetryStatuses = slices.Clone(m.RetryStatuses)
	}
	if m.PermanentStatuses != nil {
		c.PermanentStatuses = slices.Clone(m.PermanentStatuses)
	}
	c.MinBackoff = time.Duration(m.MinBackoffMS) * time.Millisecond
	if m.Jitter != "" {
		c.Jitter = m.Jitter
	}
	if m.Unknown != "" {
		c.Unknown = m.Unknown
	}
	return c
}

// Meta returns the contract as a client run's meta event carries it, every
// field explicit.
func (c ClientContract) Meta() *history.ClientContract {
	d := ClientContractFromMeta(&history.ClientContract{Budget: c.Budget, GlobalBudget: c.GlobalBudget,
		RetryStatuses: c.RetryStatuses, PermanentStatuses: c.PermanentStatuses, MinBackoffMS: c.MinBackoff.Milliseconds(),
		Jitter: c.Jitter, Unknown: c.Unknown})
	return &history.ClientContract{Budget: d.Budget, GlobalBudget: d.GlobalBudget,
		RetryStatuses: d.RetryStatuses, PermanentStatuses: d.PermanentStatuses, MinBackoffMS: d.MinBackoff.Milliseconds(),
		Jitter: d.Jitter, Unknown: d.Unknown}
}

// WithClientContract sets the client contract the client checks judge by,
// over the one the history's meta event carries.
func WithClientContract(c ClientContract) Option {
	return func(cfg *config) {
		filled := ClientContractFromMeta(c.Meta())
		cfg.client = &filled
	}
}

// DefaultNames returns the invariants a history is judged by when neither
// its meta event nor the caller names any: the client suite for a client
// run's, the server suite (all seven) otherwise.
func DefaultNames(mode string) []string {
	if mode == history.ModeClient {
		return SuiteNames(SuiteClient)
	}
	return Names()
}

// clientContract returns the client contract in force for h.
func (c *config) clientContract(h *history.History) ClientContract {
	if c.client != nil {
		return *c.client
	}
	return ClientContractFromMeta(h.Meta.ClientContract)
}

// permanent says whether the contract calls a status permanent.
func (c ClientContract) permanent(status int) bool {
	return slices.Contains(c.PermanentStatuses, status)
}

// clientIntent is one intent of a client history: its attempts in the
// order they were sent, its invocation and belief (-1 when none), and the
// effects attributed to it.
type clientIntent struct {
	id         string
	tenant     string
	attempts   []int32
	invocation int32
	belief     int32
	effects    []int32
}

// clientView groups a client history by intent, in order of first
// appearance (an invocation, an attempt or a belief), in one pass.
type clientView struct {
	intents []clientIntent
	// unattributed are the effects that name no intent of the history.
	unattributed []int32
}

// client returns the history grouped by intent, built once per index.
func (ix *index) client() *clientView {
	ix.clientMu.Lock()
	defer ix.clientMu.Unlock()
	if ix.clientV != nil {
		return ix.clientV
	}
	h := ix.h
	v := &clientView{}
	byID := make(map[string]int32, len(h.Invocations)+len(h.Beliefs))
	of := func(id, tenant string) int32 {
		i, ok := byID[id]
		if !ok {
			i = int32(len(v.intents))
			byID[id] = i
			v.intents = append(v.intents, clientIntent{id: id, tenant: tenant, invocation: -1, belief: -1})
		}
		if v.intents[i].tenant == "" {
			v.intents[i].tenant = tenant
		}
		return i
	}
	for i := range h.Invocations {
		if g := of(h.Invocations[i].Intent, h.Invocations[i].Tenant); v.intents[g].invocation < 0 {
			v.intents[g].invocation = int32(i)
		}
	}
	// Attempts are counted, then placed into one array: a slice per intent
	// grown by append would copy each attempt several times.
	at := make([]int32, len(h.Attempts))
	var counts []int32
	for i := range h.Attempts {
		a := &h.Attempts[i]
		g := of(a.Intent, a.Tenant)
		for int(g) >= len(counts) {
			counts = append(counts, 0)
		}
		counts[g]++
		at[i] = g
	}
	for i := range h.Beliefs {
		if g := of(h.Beliefs[i].Intent, ""); v.intents[g].belief < 0 {
			v.intents[g].belief = int32(i)
		}
	}
	flat := make([]int32, len(h.Attempts))
	off := int32(0)
	for g := range v.intents {
		n := int32(0)
		if g < len(counts) {
			n = counts[g]
		}
		v.intents[g].attempts = flat[off : off : off+n]
		off += n
	}
	for i, g := range at {
		ci := &v.intents[g]
		ci.attempts = append(ci.attempts, int32(i))
	}
	for g := range v.intents {
		if idx := v.intents[g].attempts; !slices.IsSortedFunc(idx, ix.byInvoke) {
			slices.SortStableFunc(idx, ix.byInvoke)
		}
	}
	for i := range ix.effects {
		if g, ok := byID[ix.effects[i].Intent]; ok && ix.effects[i].Intent != "" {
			v.intents[g].effects = append(v.intents[g].effects, int32(i))
		} else {
			v.unattributed = append(v.unattributed, int32(i))
		}
	}
	ix.clientV = v
	return v
}

// violation starts a violation of the invariant about intent ci, naming
// the attempts idx.
func (ci *clientIntent) violation(h *history.History, invariant string, idx []int32) Violation {
	v := Violation{Invariant: invariant, Tenant: ci.tenant, Intent: ci.id, Ops: opsOf(h, idx)}
	if len(ci.attempts) > 0 {
		a := &h.Attempts[ci.attempts[0]]
		v.Method, v.Path, v.Key = a.Method, a.Path, a.Key
	}
	return v
}

// beliefOf returns the intent's belief, or nil when its command's end was
// not recorded.
func (ci *clientIntent) beliefOf(h *history.History) *history.Belief {
	if ci.belief < 0 {
		return nil
	}
	return &h.Beliefs[ci.belief]
}

// ending says how an attempt ended, for an explanation: "502 from the
// fault proxy, after the upstream executed it", "a reset", "201".
func ending(a *history.Attempt) string {
	var s string
	switch a.Outcome {
	case history.OK:
		s = fmt.Sprintf("%d", a.Status)
	case history.Fail:
		s = "no connection"
		if a.Error != "" {
			s += " (" + a.Error + ")"
		}
	default:
		s = "no answer"
		if a.Error != "" {
			s += " (" + a.Error + ")"
		}
	}
	if a.Proxied {
		if a.Forwarded {
			s += " from the fault proxy, after the upstream executed it"
		} else {
			s += " from the fault proxy, not forwarded"
		}
	}
	return s
}

// indeterminateForClient says whether the client cannot know from the
// attempt's ending that it did not execute: no answer (a timeout, a
// reset), a gateway's 500/502/504, or any 5xx the proxy gave after the
// upstream executed.
func indeterminateForClient(a *history.Attempt) bool {
	switch {
	case a.Outcome == history.Info:
		return true
	case a.Outcome != history.OK:
		return false
	case a.Status == 500 || a.Status == 502 || a.Status == 504:
		return true
	}
	return a.Proxied && a.Forwarded && a.Status >= 500
}

// ms formats a duration in whole milliseconds for an explanation.
func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// notClient is the reason a client check gives on a history without the
// facts it needs.
func notClient(h *history.History, what string) string {
	if h.Client() {
		return ""
	}
	return "the history is not a client run's (its meta event's mode is not \"client\"), so " + what + " cannot be judged"
}

// keysOf lists the distinct keys of the attempts, in order of first use.
func keysOf(h *history.History, idx []int32) []string {
	var keys []string
	for _, i := range idx {
		if k := h.Attempts[i].Key; k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// quoteList writes "a", "a and b", or "a, b and 3 more".
func quoteList(items []string, most int) string {
	q := make([]string, 0, min(len(items), most)+1)
	for i, s := range items {
		if i == most {
			q = append(q, fmt.Sprintf("%d more", len(items)-most))
			break
		}
		q = append(q, fmt.Sprintf("%q", s))
	}
	return joinWords(q)
}
