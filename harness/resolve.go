package harness

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// runPlan is one run of a scenario resolved before anything starts: the
// target to start, how the history is written and judged, and a plan of
// its own for every step. From there to the verdict, [Runner.Run] reads
// the scenario only through it.
type runPlan struct {
	name       string // the scenario's, for the history
	mutant     string // "" for the correct service
	invocation Invocation
	target     sut.TargetSpec
	hooks      scenarios.Hooks
	// standby: the faults act on the environment's standby (a reference
	// target's database is the one it replicates).
	standby  bool
	contract *history.Contract // for the meta line
	// clientContract (a client scenario) is the meta line's client_contract.
	clientContract *history.ClientContract
	// invariants are the checks judged, named in the meta line; judge are
	// the options the verdict rules read (the contract's statuses).
	invariants []string
	checker    checkers.Checker
	judge      []checkers.Option
	load       history.LoadOptions
	effects    scenarios.Effects // the oracle is made once the target is up
	// tenants are those an http oracle with placeholders reads for.
	tenants []oracle.Tenant
	named   *acks // nil: the scenario names no response id
	steps   []stepPlan
}

// stepPlan is one step resolved: how its plan is made and sent, and what
// it expects.
type stepPlan struct {
	name, expect string
	wait         time.Duration
	seed         int64
	traffic      scenarios.Traffic
	faults       []builtFault
	// The plan is given (a replay, a shrink), or made from the callbacks
	// of the orders so far, or resent (the previous step's intents), or
	// else drawn from the traffic, the request and the tenants.
	given        *Plan
	callbacks    *scenarios.Callbacks
	webhook      *webhookStep
	endpointPath string
	resend       bool
	request      requestSpec
	tenants      []string
	prefix       string
	keyPrefix    string
	// client, in a client scenario, runs the user's command per intent
	// instead of the driver.
	client *clientStep
	// driver is how the plan is sent, but for what only the run knows
	// (the target's URL, the recorder, the router, the plan's seed).
	driver driver.Config
}

// resolve reads, once, everything a run of s needs.
func (r *Runner) resolve(s *scenarios.Scenario, opts RunOptions) (*runPlan, error) {
	rp := &runPlan{name: s.Name, invocation: opts.Invocation, hooks: s.Hooks, effects: s.Effects, tenants: oracleTenants(s),
		standby: s.Target.Reference != nil,
		target:  sut.TargetSpec{Target: s.Target, Tokens: s.Endpoint.Tokens, EffectsDSN: s.Effects.DSN}}
	if rp.invocation.Env == "" && r.kind != autoKind(s.Target.URL, s) {
		// A run not in the environment a bare run picks is replayed in
		// the same one (the same scenario in containers could behave
		// otherwise).
		rp.invocation.Env = string(r.kind)
	}
	if ref := s.Target.Reference; ref != nil {
		rp.mutant = ref.Mutant
	}
	switch opts.Mutant {
	case "":
	case CorrectService:
		rp.mutant = ""
	default:
		rp.mutant = opts.Mutant
	}
	if s.Target.Reference != nil {
		m, err := lookupMutant(rp.mutant)
		if err != nil {
			return nil, fmt.Errorf("reference target: %w", err)
		}
		rp.target.Mutant, rp.target.MutantStandby, rp.target.MutantConsumer = rp.mutant, m.Standby, m.Consumer
	}
	contract, err := s.CheckerContract()
	if err != nil {
		return nil, err
	}
	rp.contract, rp.load, rp.judge = contract.Meta(), contract.LoadOptions(), contract.Options()
	rp.invariants = s.InvariantNames()
	if s.IsClient() {
		// The reference upstream executes keyless POSTs: a client's blind
		// re-send really makes a second order.
		rp.clientContract, rp.target.ExecuteKeyless = clientContractOf(s), s.Target.Reference != nil
	}
	if rp.checker, err = s.Checker(); err != nil {
		return nil, err
	}
	if rp.named, err = newAcks(s.Effects.ResponseID); err != nil {
		return nil, fmt.Errorf("effects.response_id: %w", err)
	}
	if s.IsClient() {
		rp.named = nil // the client path attributes by listener
	}
	// A user's service remembers every key it ever saw: keys carry the
	// scenario's name and a nonce of this run, so neither another scenario
	// nor an earlier run can collide with them. The reference starts from an
	// empty database every run, so its keys stay the same for a seed.
	keyPrefix := s.KeyPrefix(runNonce())
	if m := s.Contract.MaxKeyLength; m > 0 && s.KeyLength(opts.Seed) > m {
		// Load checked seeds up to scenarios.MaxValidatedSeed; this one
		// is larger.
		return nil, fmt.Errorf("contract.max_key_length: seed %d makes keys of %d characters (%s), longer than %d", opts.Seed, s.KeyLength(opts.Seed), s.LongestKey(opts.Seed), m)
	}
	if rp.steps, err = resolveSteps(s, opts.Seed, keyPrefix, opts.Plans, opts.do); err != nil {
		return nil, err
	}
	// Even the driver's connections to the harness's own proxies go
	// through the gate: what it checked is what is dialled.
	dial := r.gate().For("the target's proxy").DialContext
	for i := range rp.steps {
		rp.steps[i].driver.Dial = dial
	}
	if opts.Expect != "" && len(rp.steps) > 0 {
		rp.steps[len(rp.steps)-1].expect = opts.Expect
	}
	return rp, nil
}

// resolveSteps resolves every step of s: its faults built (fresh values,
// since a fault may keep state while it runs), its traffic, its request
// and its driver's configuration.
func resolveSteps(s *scenarios.Scenario, seed int64, keyPrefix string, given map[int]Plan, do ClientDo) ([]stepPlan, error) {
	steps := s.EffectiveSteps()
	rq, tenants := requestOf(s), tenantsOf(s)
	inFlight := 409
	refuse := 0
	if p, err := s.Profile(); err == nil && p.InFlight != 0 {
		inFlight = p.InFlight
		if p.Refuse != 0 {
			// A service that refuses every repeat has no "not now": its
			// refusal is final, and the client does not retry it.
			refuse = p.Refuse
			if inFlight == refuse {
				inFlight = 0
			}
		}
	}
	var cs *clientStep
	if s.IsClient() {
		var err error
		if cs, err = newClientStep(s); err != nil {
			return nil, err
		}
		cs.do = do
	}
	out := make([]stepPlan, len(steps))
	for i, st := range steps {
		fs, err := buildSpecs(st.Faults, i, len(steps))
		if err != nil {
			return nil, err
		}
		tr := s.Traffic
		if st.Traffic != nil {
			tr = *st.Traffic // the loader already merged the step's overrides
		}
		if cs != nil {
			// The client's own traffic: its intents, all at once as slots
			// free up; nothing of the driver's.
			tr = scenarios.Traffic{Intents: cmp.Or(st.Intents, s.Client.Intents), Tenants: tr.Tenants, Concurrency: s.Client.Concurrency}
			for j := range fs {
				fs[j] = clientBuiltFault(fs[j].spec, fs[j].fault)
			}
		}
		var wh *webhookStep
		if st.Webhook != nil {
			if wh, fs, err = newWebhookStep(s, *st.Webhook, fs, i, len(steps)); err != nil {
				return nil, err
			}
		}
		sp := stepPlan{name: st.Name, expect: expectOf(st), wait: st.Wait, seed: seed + int64(i), traffic: tr, faults: fs, webhook: wh,
			callbacks: st.Callbacks, endpointPath: s.Endpoint.Path, resend: st.Resend && i > 0,
			request: rq, tenants: tenants, prefix: stepPrefix(i), keyPrefix: keyPrefix}
		if p, ok := given[i]; ok {
			sp.given = &p
		}
		sp.client = cs
		sp.driver = driver.Config{Tokens: withProvider(s.Endpoint.Tokens, st.Callbacks), KeyHeader: s.Endpoint.KeyHeader, Template: rq.tmpl,
			Concurrency: tr.Concurrency, MaxRequests: tr.MaxRequests, Deadline: tr.Deadline, Timeout: tr.Timeout,
			Model: driver.Model(tr.Client), InFlightStatus: inFlight, RefuseStatus: refuse, DecisionBound: decisionBound(s),
			Retry: driver.RetryPolicy{MaxAttempts: tr.Retry.MaxAttempts, Base: tr.Retry.Base, Max: tr.Retry.Max, MaxRetryAfter: tr.Retry.MaxRetryAfter, Budget: tr.Retry.Budget}}
		if s.Target.Reference != nil {
			// The reference stores the intent on its orders, so its effects
			// carry ground truth (another service just ignores the header).
			sp.driver.IntentHeader = "X-Intent-ID"
		}
		if st.Callbacks != nil {
			// The reference verifies its provider's signature.
			sp.driver.Sign = signCallback
		}
		if wh != nil {
			sp.driver = wh.driverConfig(sp.driver)
			if wh.reference {
				sp.driver.Tokens = map[string]string{providerTenant: reference.DefaultProviderToken}
			}
		}
		out[i] = sp
	}
	return out, nil
}

// draw is the step's plan when it needs nothing of the run's history:
// given, resent from the previous step's, or drawn from the seed.
func (st *stepPlan) draw(prev Plan) Plan {
	switch {
	case st.given != nil:
		return *st.given
	case st.resend:
		return resendPlan(prev, st.seed, st.faults)
	}
	p := generatePlan(st.seed, st.traffic, st.request, st.faults, st.tenants, st.prefix, st.keyPrefix)
	if st.client != nil {
		p = clientPlan(p)
	}
	return p
}

func expectOf(st scenarios.Step) string {
	if st.Expect == "" {
		return "clean"
	}
	return st.Expect
}

func stepPrefix(i int) string { return scenarios.StepKeyPrefix(i) }

// runNonce is a short random tag for one run against a user's service.
func runNonce() string {
	var b [scenarios.NonceLength / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// tenantsOf lists the scenario's tenants: the token map's, else t1..tN.
func tenantsOf(s *scenarios.Scenario) []string {
	if len(s.Endpoint.Tokens) > 0 {
		out := make([]string, 0, len(s.Endpoint.Tokens))
		for tn := range s.Endpoint.Tokens {
			out = append(out, tn)
		}
		sort.Strings(out)
		if n := s.Traffic.Tenants; n > 0 && n < len(out) {
			out = out[:n]
		}
		return out
	}
	// No tokens (the tenant lives in a header, the query, the path or the
	// body): t1..tN, N the most tenants any step asks for.
	n := max(s.Traffic.Tenants, 1)
	for _, st := range s.Steps {
		if st.Traffic != nil {
			n = max(n, st.Traffic.Tenants)
		}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i+1)
	}
	return out
}

// lookupMutant returns the reference's mutant of that name; "" and
// [CorrectService] are the correct service (a zero Mutant). An unknown name
// is an error that suggests the closest one.
func lookupMutant(name string) (reference.Mutant, error) {
	if name == CorrectService {
		name = ""
	}
	return reference.LookupMutant(name)
}
