package checkers

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/idemchaos/idemchaos/history"
)

// The one verdict. A run and an offline check of its history must come to
// the same verdict, so every rule that decides between pass, violation,
// "nothing to judge" and "the environment failed" reads the history alone
// and lives here: `run` applies these rules after its checks, and so do
// `check` (in memory or partition by partition), `merge` and `check
// --together`. The rules, in order (ARCHITECTURE.md says them in words):
//
//  1. Environment error (exit 3): the history records an environment event
//     (the harness's database died, the disk filled, the oracle could not be
//     read, the target answered none of the run's attempts), or its oracle
//     read no effect at all in a run whose service acknowledged requests
//     (the oracle reads the wrong place). Every step gets it; what looked
//     like violations is set aside, never reported.
//  2. Nothing to judge (exit 2), per step: no request was sent; or every
//     answer the service itself gave in the step has a status the contract
//     does not name as a decision (404 everywhere: a wrong path; 403: wrong
//     credentials), which sets aside what the checks found; or every
//     violation the checks found is a setup problem of the target (keys
//     left undecided because the service refused connections: a listen
//     backlog too small for the traffic), set aside too; or, when the
//     checks passed, no request has succeeded so far, or the step's request
//     budget ran out before every intent was sent and retried. Answers the
//     harness's own fault proxy gave in the service's stead (an injected 429
//     or 5xx) are never the service's.
//  3. Otherwise the checks' verdict: a violation (exit 1), unknown, or pass.
//
// A step is met when its expectation holds: "clean" wants a pass, an
// invariant name wants that invariant violated.

// Facts are what the verdict rules read of a history besides the checks'
// results: its steps with the answers each got, its environment errors and
// its oracle's reads. They add up over the key partitions of a history
// ([Facts.Add]), and travel between machines as JSON.
type Facts struct {
	Steps []StepFacts `json:"steps"`
	// Environment is the history's environment errors, "" for none.
	Environment string `json:"environment,omitempty"`
	// OracleReads counts the oracle's reads; OracleSource and OracleGot say
	// where the last one read and what came back.
	OracleReads  int    `json:"oracle_reads,omitempty"`
	OracleSource string `json:"oracle_source,omitempty"`
	OracleGot    string `json:"oracle_got,omitempty"`
	// Effects counts the effects the history records.
	Effects int `json:"effects"`
	// Client says the history is a client run's: the client is judged, so a
	// step whose every answer the fault proxy gave is judged, not excused.
	Client bool `json:"client,omitempty"`
}

// StepFacts are one step's name, expectation and answers.
type StepFacts struct {
	Name   string `json:"name,omitempty"`
	Expect string `json:"expect"`
	// MaxRequests is the request budget that ran out in the step (0: none).
	MaxRequests int64 `json:"max_requests,omitempty"`
	// Attempts counts the step's own attempts; Answers those the service
	// answered, by status; Proxied those the harness's fault proxy
	// answered in the service's stead, by status; Info and Fail those that
	// got no answer.
	Attempts int         `json:"attempts"`
	Answers  map[int]int `json:"answers,omitempty"`
	Proxied  map[int]int `json:"proxied,omitempty"`
	Info     int         `json:"info,omitempty"`
	Fail     int         `json:"fail,omitempty"`
	// ProxyLost counts the attempts of Info and Fail whose answer the fault
	// proxy dropped or refused ("by":"proxy" without a response).
	ProxyLost int `json:"proxy_lost,omitempty"`
}

// FactsOf reads the facts of h.
func FactsOf(h *history.History) Facts {
	f := Facts{Environment: h.Environment, Effects: len(h.Effects), OracleReads: len(h.Oracle), Client: h.Client()}
	if n := len(h.Oracle); n > 0 {
		f.OracleSource, f.OracleGot = h.Oracle[n-1].Source, h.Oracle[n-1].Got
	}
	var proxied map[int64]bool
	for _, fl := range h.Faults {
		if fl.Op != 0 && fl.Action == "fire" && answersInstead(fl.Kind) {
			if proxied == nil {
				proxied = map[int64]bool{}
			}
			proxied[fl.Op] = true
		}
	}
	for i := range h.StepCount() {
		st := h.StepInfo(i)
		sf := StepFacts{Name: st.Name, Expect: st.Expect, MaxRequests: st.MaxRequests}
		for _, a := range h.StepAttempts(i) {
			sf.Attempts++
			if a.Proxied && a.Outcome != history.OK {
				sf.ProxyLost++
			}
			switch {
			case a.Outcome == history.Info:
				sf.Info++
			case a.Outcome == history.Fail:
				sf.Fail++
			case proxied[a.Op] || a.Proxied:
				// The fault proxy's answer ("by":"proxy", or a fault
				// that answers in the service's stead) is not the
				// service's.
				sf.Proxied = inc(sf.Proxied, a.Status, 1)
			default:
				sf.Answers = inc(sf.Answers, a.Status, 1)
			}
		}
		f.Steps = append(f.Steps, sf)
	}
	return f
}

// answersInstead says whether a fault of the kind, aimed at an attempt,
// answers it in the service's stead: the rate limiter's 429 is sent
// without forwarding, the gateway's 5xx replaces the service's answer.
func answersInstead(kind string) bool { return kind == "rate-limit" || kind == "gateway-5xx" }

func inc(m map[int]int, k, n int) map[int]int {
	if m == nil {
		m = map[int]int{}
	}
	m[k] += n
	return m
}

// Add adds the facts of another part of the same history (another key
// partition): its attempts and effects to these; the steps, environment
// and oracle reads, which every part records, are the same in each.
func (f *Facts) Add(g Facts) {
	for i, s := range g.Steps {
		if i == len(f.Steps) {
			f.Steps = append(f.Steps, StepFacts{Name: s.Name, Expect: s.Expect, MaxRequests: s.MaxRequests})
		}
		t := &f.Steps[i]
		t.Attempts += s.Attempts
		t.Info += s.Info
		t.Fail += s.Fail
		t.ProxyLost += s.ProxyLost
		for k, n := range s.Answers {
			t.Answers = inc(t.Answers, k, n)
		}
		for k, n := range s.Proxied {
			t.Proxied = inc(t.Proxied, k, n)
		}
	}
	if f.Environment == "" {
		f.Environment = g.Environment
	}
	f.Client = f.Client || g.Client
	if g.OracleReads > f.OracleReads {
		f.OracleReads, f.OracleSource, f.OracleGot = g.OracleReads, g.OracleSource, g.OracleGot
	}
	f.Effects += g.Effects
}

// Judgement is the verdict over a whole history, step by step.
type Judgement struct {
	// Verdict is the worst of the steps'.
	Verdict Verdict
	// Reason is the environment error, in one line ("" when none).
	Reason string
	Steps  []StepResult
}

// StepResult is one step's result: the checks over the history up to the
// step's end, with the verdict rules applied, and whether the step's
// expectation held.
type StepResult struct {
	Name, Expect string
	Result       Result
	Met          bool
}

// Met says every step's expectation held.
func (j Judgement) Met() bool {
	for _, s := range j.Steps {
		if !s.Met {
			return false
		}
	}
	return len(j.Steps) > 0
}

// Judge checks h with c step by step — each step on the history up to its
// end ([history.History.Through]) — and applies the verdict rules. opts
// give the contract the rules read (which statuses are decisions); they
// should be the ones c was built with.
func Judge(h *history.History, c Checker, opts ...Option) Judgement {
	n := h.StepCount()
	results := make([]Result, n)
	for i := range n {
		p := h.Through(i)
		results[i] = c.Check(p, p.Effects)
	}
	return Decide(FactsOf(h), results, opts...)
}

// Decide applies the verdict rules to the checks' results, one per step of
// f, in order: what [Judge] does once the checks have run, for callers that
// checked the parts of a history separately and merged their results.
func Decide(f Facts, steps []Result, opts ...Option) Judgement {
	cfg := newConfig(opts)
	p := cfg.profile()
	j := Judgement{Reason: environment(f)}
	var sofar StepFacts // the steps so far, added up
	var reported []reportedViolation
	for i, r := range steps {
		var own StepFacts
		if i < len(f.Steps) {
			own = f.Steps[i]
		} else {
			own = StepFacts{Expect: "clean"}
		}
		r, reported = ownViolations(r, i, f.Steps, reported)
		sofar.Attempts += own.Attempts
		sofar.Info += own.Info
		sofar.Fail += own.Fail
		sofar.ProxyLost += own.ProxyLost
		for k, n := range own.Answers {
			sofar.Answers = inc(sofar.Answers, k, n)
		}
		for k, n := range own.Proxied {
			sofar.Proxied = inc(sofar.Proxied, k, n)
		}
		setup := setupOnly(r)
		switch {
		case j.Reason != "":
			r = setAside(r, EnvironmentError, j.Reason, "the environment failed")
		case sofar.Attempts == 0 && r.Verdict == Pass:
			r = withReason(r, "no request was sent, so nothing was judged")
		case undecided(own, p) != "":
			r = setAside(r, Unknown, undecided(own, p), "nothing to judge in this step")
		case setup != "":
			r = setAside(r, Unknown, setup, "")
		case r.Verdict == Pass && accepted(sofar) == 0 && !(f.Client && injected(sofar)):
			// Every check passes vacuously when nothing executed: a wrong
			// path, body or token must not read as a clean service.
			r = withReason(r, fmt.Sprintf("no request succeeded (%s), so nothing was judged: check the endpoint's path, body and tokens", endings(sofar)))
		case r.Verdict == Pass && own.MaxRequests > 0:
			// Attempts the budget stopped were never judged: a pass on the
			// part that ran would claim more than the run knows.
			r = withReason(r, fmt.Sprintf("the request budget ran out (max_requests %d) before every intent was sent and retried; raise traffic.max_requests", own.MaxRequests))
		}
		j.Steps = append(j.Steps, StepResult{Name: own.Name, Expect: own.Expect, Result: r, Met: expectationMet(own.Expect, r)})
		j.Verdict = max(j.Verdict, r.Verdict)
	}
	return j
}

// setupOnly is the reason of a step whose every violation is a setup
// problem of the target ([Violation.Setup]), or "": a backlog too small
// for the traffic refused the attempts that went undecided, and the
// service's idempotency was never put to the test for them.
func setupOnly(r Result) string {
	n, cause := 0, ""
	for _, l := range Leaves(r) {
		for _, v := range l.Violations {
			if !v.Setup {
				return ""
			}
			n, cause = n+1, v.Cause
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%d key(s)); nothing else was found, so nothing was judged: a setup problem, not the service's idempotency", cause, n)
}

// reportedViolation is a violation an earlier step reported, and which.
type reportedViolation struct {
	v    Violation
	step int
}

// sameViolation says later is the violation earlier was, seen again in a
// longer history: the same invariant, tenant, key and intent, and the ops
// earlier named are the first of later's (a resend may add attempts to an
// intent already found duplicated; another replay of one key is another
// violation).
func sameViolation(earlier, later Violation) bool {
	return earlier.Invariant == later.Invariant && earlier.Tenant == later.Tenant && earlier.Key == later.Key &&
		earlier.Intent == later.Intent && len(earlier.Ops) <= len(later.Ops) && slices.Equal(earlier.Ops, later.Ops[:len(earlier.Ops)])
}

// ownViolations keeps of r, step i's checks over the history up to its end,
// the violations no earlier step reported, and adds them to reported. Each
// step is checked on the whole history so far (resend, callback and
// retention steps span steps), but a violation is printed once, under the
// first step that saw it — the step of its first op, or the later one that
// completed it — and only a step's own violations make it fail. A check
// left with none passes, saying where its violations were reported.
func ownViolations(r Result, i int, steps []StepFacts, reported []reportedViolation) (Result, []reportedViolation) {
	if len(reported) == 0 && i == 0 {
		for _, v := range r.Violations {
			reported = append(reported, reportedViolation{v, i})
		}
		return r, reported
	}
	stepName := func(k int) string {
		if k < len(steps) && steps[k].Name != "" {
			return fmt.Sprintf("step %d %q", k+1, steps[k].Name)
		}
		return fmt.Sprintf("step %d", k+1)
	}
	var fresh []reportedViolation
	keep := func(p Result) Result {
		if len(p.Violations) == 0 {
			return p
		}
		var own []Violation
		where := -1
		for _, v := range p.Violations {
			k := slices.IndexFunc(reported, func(e reportedViolation) bool { return sameViolation(e.v, v) })
			if k < 0 {
				own = append(own, v)
				fresh = append(fresh, reportedViolation{v, i})
				continue
			}
			if where < 0 {
				where = reported[k].step
			}
		}
		if n := len(p.Violations) - len(own); n > 0 {
			p.Violations = own
			if len(own) == 0 && p.Verdict == Violated {
				p.Verdict = Pass
				p.Reason = fmt.Sprintf("its %d violation(s) so far are reported under %s", n, stepName(where))
			}
		}
		return p
	}
	if len(r.Results) == 0 {
		r = keep(r)
	} else {
		parts := make([]Result, len(r.Results))
		r.Verdict, r.Violations = Pass, nil
		for k, p := range r.Results {
			parts[k] = keep(p)
			r.Violations = append(r.Violations, parts[k].Violations...)
			r.Verdict = max(r.Verdict, parts[k].Verdict)
		}
		r.Results = parts
	}
	return r, append(reported, fresh...)
}

// environment is the environment error of the history, in one line, or "".
func environment(f Facts) string {
	if f.Environment != "" {
		return f.Environment
	}
	acked := 0
	for _, s := range f.Steps {
		acked += accepted(s)
	}
	if f.OracleReads > 0 && f.Effects == 0 && acked > 0 {
		// Not one effect for any acknowledged request: a setup slip (a
		// wrong URL or query, a tenant placeholder never rendered), not a
		// service that lost everything. Some effects and some lost ones
		// are judged as findings.
		got := f.OracleGot
		if got == "" {
			got = "nothing"
		}
		return fmt.Sprintf("the effect oracle read no effect at all (%s returned %s) while %d requests were acknowledged: it probably reads the wrong place (check effects.url, effects.items or effects.query)",
			orDefault(f.OracleSource, "its read"), got, acked)
	}
	return ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// injected says the fault proxy answered, dropped or refused some of the
// attempts: in a client run, a step of injected answers judges how the
// client took them, so it is not excused for want of a success.
func injected(s StepFacts) bool { return total(s.Proxied) > 0 || s.ProxyLost > 0 }

// accepted counts the service's 2xx answers.
func accepted(s StepFacts) int {
	n := 0
	for st, k := range s.Answers {
		if st/100 == 2 {
			n += k
		}
	}
	return n
}

// undecided explains a step in which every answer the service gave has a
// status the contract does not name as a decision (a redirect or a client
// error other than its missing-key, reuse and in-flight statuses), or
// returns "". Such answers say the requests never reached the idempotency
// logic: a wrong path (404), wrong credentials (401, 403), a limiter
// (429). A step stuck in 409 or 5xx is judged: that is a finding.
func undecided(s StepFacts, p Profile) string {
	if len(s.Answers) == 0 {
		return ""
	}
	for st := range s.Answers {
		if st < 300 || st >= 500 || st == p.MissingKey || st == p.Reuse || st == p.InFlight {
			return ""
		}
	}
	statuses := slices.Sorted(maps.Keys(s.Answers))
	what := "a status"
	if len(statuses) > 1 {
		what = "statuses"
	}
	proxied := ""
	if n := total(s.Proxied); n > 0 {
		proxied = fmt.Sprintf(", besides %d from the harness's fault proxy,", n)
	}
	return fmt.Sprintf("every answer the service gave (%s)%s has %s the contract does not name as a decision, so nothing was judged: %s",
		endings(StepFacts{Answers: s.Answers}), proxied, what, hint(statuses))
}

// hint says what to look at for answers of these statuses.
func hint(statuses []int) string {
	all := func(ok func(int) bool) bool {
		for _, s := range statuses {
			if !ok(s) {
				return false
			}
		}
		return true
	}
	switch {
	case all(func(s int) bool { return s == 401 || s == 403 }):
		return "check the credentials (endpoint.tokens, the token header) and where the tenant goes (endpoint.tenant)"
	case all(func(s int) bool { return s == 404 }):
		return "check the endpoint's path and the target URL"
	case all(func(s int) bool { return s == 405 }):
		return "check the endpoint's method"
	case all(func(s int) bool { return s == 406 || s == 415 }):
		return "check the request's content type and headers"
	case all(func(s int) bool { return s == 429 }):
		return "the service rate-limits the clients: lower traffic.concurrency"
	case all(func(s int) bool { return s/100 == 3 }):
		return "the service redirects: point the target at the final URL"
	}
	return "check the endpoint's path, body and tokens"
}

func total(m map[int]int) int {
	n := 0
	for _, k := range m {
		n += k
	}
	return n
}

// endings lists how the attempts ended: "3× 404, 2× info", the fault
// proxy's answers apart.
func endings(s StepFacts) string {
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(s.Answers)) {
		parts = append(parts, fmt.Sprintf("%d× %d", s.Answers[st], st))
	}
	for _, st := range slices.Sorted(maps.Keys(s.Proxied)) {
		parts = append(parts, fmt.Sprintf("%d× %d from the fault proxy", s.Proxied[st], st))
	}
	if s.Fail > 0 {
		parts = append(parts, fmt.Sprintf("%d× fail", s.Fail))
	}
	if s.Info > 0 {
		parts = append(parts, fmt.Sprintf("%d× info", s.Info))
	}
	return strings.Join(parts, ", ")
}

// withReason makes a passing result unknown, for the reason given: the
// checks found nothing wrong, and nothing to go on either.
func withReason(r Result, why string) Result {
	r.Verdict, r.Reason = Unknown, why
	return r
}

// setAside gives r the verdict v for the reason why, and sets aside what
// its checks found: each part that judged something says it was not
// judged (short says why), and how many possible violations it dropped. Violations found where
// nothing could be judged would accuse the service of the setup's fault.
// With short "" (a setup problem of the target), only the parts that found
// violations are set aside: what the others judged of the keys the
// service did serve stands.
func setAside(r Result, v Verdict, why, short string) Result {
	n := len(r.Violations)
	r.Verdict, r.Reason, r.Violations = v, why, nil
	if len(r.Results) == 0 {
		if n > 0 && short != "" {
			r.Reason += fmt.Sprintf("; %d possible violation(s) not judged", n)
		}
		return r
	}
	parts := make([]Result, len(r.Results))
	for i, p := range r.Results {
		if p.Verdict == Pass && p.Checked == 0 || short == "" && len(p.Violations) == 0 {
			parts[i] = p // it judged nothing, or found nothing of the setup's: nothing to set aside
			continue
		}
		reason := "not judged: " + cmp.Or(short, "a setup problem, not the service's idempotency")
		if k := len(p.Violations); k > 0 {
			reason += fmt.Sprintf(" (%d possible violation(s) set aside)", k)
		}
		p.Verdict, p.Reason, p.Violations = Unknown, reason, nil
		parts[i] = p
	}
	r.Results = parts
	return r
}

// expectationMet: "clean" wants a pass; an invariant name wants that
// invariant violated.
func expectationMet(expect string, r Result) bool {
	if expect == "" || expect == "clean" {
		return r.Verdict == Pass
	}
	for _, p := range Leaves(r) {
		if p.Name == expect && p.Verdict == Violated {
			return true
		}
	}
	return false
}
