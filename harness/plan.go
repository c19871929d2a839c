package harness

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/scenarios"
)

// Plan is everything one step will do, decided before anything is sent:
// the intents (tenants, keys, bodies, start times, double clicks, aimed
// faults) and the timed faults. The same scenario and seed give the same
// plan; a shrunk plan is a plan too.
type Plan struct {
	Seed    int64
	Intents []driver.Intent
	Timed   []TimedFault
	// Note says what a plan that is only known at run time will hold.
	Note string `json:",omitempty"`
	// Client says the plan is a client step's: the user's client sends
	// each intent and mints its keys; Faults aim at the attempts arriving
	// on the intent's listener (attempt 0: every attempt) and Timed are
	// windows hitting every intent's attempts.
	Client bool `json:",omitempty"`
}

// TimedFault is a fault applied at a time for a duration.
type TimedFault struct {
	// Fault indexes the step's faults; Kind is its kind.
	Fault int
	Kind  string
	At    time.Duration
	For   time.Duration
}

// builtFault is a scenario fault with its validated value and what the
// harness needs to know of its kind, read once from its optional
// interfaces (see faults.IsAimed and faults.AttemptsOf).
type builtFault struct {
	spec  scenarios.FaultSpec
	fault faults.Fault
	// aimed: it acts on the attempts of the intents the plan picks;
	// otherwise it is timed.
	aimed bool
	// attempts is how many consecutive attempts of a picked intent it
	// acts on.
	attempts int
}

// faultID names an aimed fault in Intent.Faults: "<kind>#<index>".
func faultID(kind string, i int) string { return kind + "#" + strconv.Itoa(i) }

func parseFaultID(id string) (int, bool) {
	i := strings.LastIndexByte(id, '#')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(id[i+1:])
	return n, err == nil
}

// generatePlan draws a plan from the scenario's traffic shape with rapid's
// generators, seeded: the same seed gives the same plan. Rates are decided
// with an unbiased coin (rapid biases its draws toward edge cases, which is
// right for values and wrong for a configured fraction).
//
// An intent's template values are drawn first and its request is rendered
// last, from its final tenant and key (the driver renders every attempt
// again from its own key): a shared or reused key never leaves a body that
// names another tenant.
func generatePlan(seed int64, tr scenarios.Traffic, rq requestSpec, fs []builtFault, tenants []string, prefix, keyPrefix string) Plan {
	gen := rapid.Custom(func(t *rapid.T) Plan {
		coin := func(rate float64, label string) bool {
			if rate <= 0 {
				return false
			}
			return float64(mix(rapid.Uint64().Draw(t, label))%1_000_000) < rate*1_000_000
		}
		p := Plan{Seed: seed}
		spread := max(tr.Spread.Milliseconds(), 0)
		var dups []driver.Intent
		for i := 0; i < tr.Intents; i++ {
			in := driver.Intent{
				ID:     fmt.Sprintf("%si%d", prefix, i+1),
				Tenant: tenants[rapid.IntRange(0, len(tenants)-1).Draw(t, "tenant")],
				Key:    fmt.Sprintf("%s%sk%d-%d", keyPrefix, prefix, seed, i+1),
				Method: rq.method,
				At:     time.Duration(rapid.Int64Range(0, spread).Draw(t, "at")) * time.Millisecond,
				Client: i%max(tr.Concurrency, 1) + 1,
				Vars:   drawVars(t, i),
			}
			if i > 0 && coin(tr.Collisions, "collision") {
				j := rapid.IntRange(0, i-1).Draw(t, "collides-with")
				in.Tenant, in.Vars, in.Variant = p.Intents[j].Tenant, p.Intents[j].Vars, p.Intents[j].Variant
			} else if i > 0 && coin(tr.Reuse, "reuse") {
				j := rapid.IntRange(0, i-1).Draw(t, "reuses")
				in.Tenant, in.Key = p.Intents[j].Tenant, p.Intents[j].Key
				// The type-only probe is asked for (traffic.retyped): a typed
				// service refuses "qty":"1" as invalid (400) before it looks
				// at the key, which says nothing about its fingerprint.
				differ(t, &in, p.Intents, rq, coin(tr.Retyped, "retype"), i)
			} else if i > 0 && len(tenants) > 1 && coin(tr.SharedKeys, "shares-key") {
				// Another tenant's key and payload: two integrations that
				// both send "order-1001" for a standard basket.
				j := rapid.IntRange(0, i-1).Draw(t, "shares-with")
				// A tenant that has not used this key yet: in its own
				// scope the key must be new, or this is a retry, not a share.
				used := map[string]bool{}
				for _, prev := range p.Intents {
					if prev.Key == p.Intents[j].Key {
						used[prev.Tenant] = true
					}
				}
				for _, tn := range tenants {
					if !used[tn] {
						in.Tenant, in.Key, in.Vars, in.Variant = tn, p.Intents[j].Key, p.Intents[j].Vars, p.Intents[j].Variant
						break
					}
				}
			}
			aim(&in, i, fs, coin)
			rq.render(&in)
			p.Intents = append(p.Intents, in)
			if coin(tr.Duplicates, "duplicate") {
				src := resubmitted(p.Intents)
				d := src
				d.Faults, d.Clicks = nil, 0
				d.At += time.Duration(rapid.Int64Range(spread/2+50, spread+100).Draw(t, "resubmit-after")) * time.Millisecond
				// The fingerprint probe: the same payload written another
				// way, which the contract says is (canonical) or is not
				// (strict) the same request.
				if rq.fingerprint != "" && d.Variant == "" && coin(0.5, "reserialise") {
					d.Variant = driver.VariantReserialised
					rq.render(&d)
					if bytes.Equal(d.Body, src.Body) {
						d.Variant = ""
						rq.render(&d)
					}
				}
				dups = append(dups, d)
			}
		}
		p.Intents = append(p.Intents, dups...)
		if tr.Retyped > 0 {
			afterStored(t, &p, rq, spread)
		}
		p.Timed = timed(fs)
		return p
	})
	return gen.Example(int(seed))
}

// resubmitted is the intent a resubmit copies: the last drawn whose first
// answer its client sees (no fault aimed at attempt 1), else the last: a
// resubmit of a dropped answer compares a replay with a replay only
// (empty-replay escaped at seed 3 so).
func resubmitted(drawn []driver.Intent) driver.Intent {
	for i := len(drawn) - 1; i >= 0; i-- {
		if drawn[i].Faults[1] == "" && drawn[i].Faults[0] == "" {
			return drawn[i]
		}
	}
	return drawn[len(drawn)-1]
}

// retypedVariants are the type-only changes a reuse probe tries, in order.
var retypedVariants = []string{driver.VariantRetypedString, driver.VariantRetypedBool}

// afterStored aims each type-only reuse at the payload the service stores
// for its key — the use of the key that starts first, whatever its index
// (a later reuse may be drawn to start earlier) — and starts it after that
// one: the driver starts intents in the order of At, so the stored payload
// is in place, or in flight, when the probe arrives. Drawn in the order
// of the plan, a probe could start before its key's first use, or retype
// a payload another use had displaced, and then a service that compares
// parsed values refuses it as a different request: the probe said nothing
// (shopfront-loose-fingerprint missed at seed 52). Its resubmits follow it.
func afterStored(t *rapid.T, p *Plan, rq requestSpec, spread int64) {
	retyped := func(v string) bool { return slices.Contains(retypedVariants, v) }
	seen := map[string]bool{}
	for i := range p.Intents {
		r := &p.Intents[i]
		if seen[r.ID] || !retyped(r.Variant) {
			continue // a resubmit (appended after every first request) follows its probe below
		}
		seen[r.ID] = true
		first := -1
		for k, x := range p.Intents {
			if x.ID == r.ID || x.Key != r.Key || x.Tenant != r.Tenant || retyped(x.Variant) {
				continue
			}
			if first < 0 || x.At < p.Intents[first].At {
				first = k
			}
		}
		if first < 0 || p.Intents[first].Variant != "" {
			continue
		}
		probe := *r
		probe.Vars = p.Intents[first].Vars
		probe.At = max(r.At, p.Intents[first].At+time.Duration(50+rapid.Int64Range(0, spread/2).Draw(t, "probe-after"))*time.Millisecond)
		ok := false
		for _, v := range retypedVariants {
			probe.Variant = v
			rq.render(&probe)
			if !sentWith(p.Intents, probe) {
				ok = true
				break
			}
		}
		if !ok {
			// Every type-only change of the stored payload is sent with
			// the key already: a reuse with new values instead.
			probe.At = r.At
			var others []driver.Intent
			for _, x := range p.Intents {
				if x.ID != r.ID {
					others = append(others, x)
				}
			}
			differ(t, &probe, others, rq, false, i)
		}
		shift := probe.At - r.At
		for k := range p.Intents {
			if x := &p.Intents[k]; x.ID == r.ID && k != i {
				// a resubmit of the probe: the same request, later
				x.Vars, x.Variant, x.Body, x.Path, x.At = probe.Vars, probe.Variant, probe.Body, probe.Path, x.At+shift
			}
		}
		*r = probe
	}
}

// sentWith says whether another intent sends in's body with its key.
func sentWith(intents []driver.Intent, in driver.Intent) bool {
	for _, x := range intents {
		if x.ID != in.ID && x.Key == in.Key && x.Tenant == in.Tenant && bytes.Equal(x.Body, in.Body) {
			return true
		}
	}
	return false
}

// aim aims the step's aimed faults that pick intent i at it; a fault that
// spans attempts is aimed at each of them.
func aim(in *driver.Intent, i int, fs []builtFault, coin func(float64, string) bool) {
	for fi, f := range fs {
		if !f.aimed || !hits(f.spec.When, i, coin) {
			continue
		}
		if c, ok := f.fault.(faults.Clicker); ok {
			in.Clicks, in.Spread = c.Clicks()
			if t, ok := c.(interface{ ClicksTogether() bool }); ok && t.ClicksTogether() {
				in.Spread, in.Together = 0, true
			}
			continue
		}
		if in.Faults == nil {
			in.Faults = map[int]string{}
		}
		if f.attempts == 0 { // a client fault on every attempt
			in.Faults[0] = faultID(f.spec.Kind, fi)
			continue
		}
		first := max(f.spec.When.Attempt, 1)
		for a := first; a < first+f.attempts; a++ {
			in.Faults[a] = faultID(f.spec.Kind, fi)
		}
	}
}

// timed lists the step's timed faults.
func timed(fs []builtFault) []TimedFault {
	var out []TimedFault
	for fi, f := range fs {
		if !f.aimed {
			out = append(out, TimedFault{Fault: fi, Kind: f.spec.Kind, At: f.spec.When.At, For: f.spec.When.For})
		}
	}
	return out
}

// resendPlan sends the previous step's intents again, same keys and
// payloads, all at once, with this step's faults: aimed ones re-aimed at
// the resent intents (a burst of double clicks after the retention
// expired), timed ones on their clocks.
func resendPlan(prev Plan, seed int64, fs []builtFault) Plan {
	p := Plan{Seed: seed}
	for _, in := range prev.Intents {
		in.At, in.Faults, in.Clicks, in.Spread, in.Together = 0, nil, 0, 0, false
		p.Intents = append(p.Intents, in)
	}
	return withFaults(p, fs)
}

// withFaults aims a step's faults at a plan made without them (a resend,
// callbacks): every step kind applies the faults it lists.
func withFaults(p Plan, fs []builtFault) Plan {
	gen := rapid.Custom(func(t *rapid.T) Plan {
		coin := func(rate float64, label string) bool {
			return rate > 0 && float64(mix(rapid.Uint64().Draw(t, label))%1_000_000) < rate*1_000_000
		}
		// rapid refuses a generator that draws nothing (no aimed fault, or
		// only every-n-th ones): one draw keeps it a generator.
		_ = rapid.Uint64().Draw(t, "salt")
		out := p
		out.Intents = make([]driver.Intent, len(p.Intents))
		for i, in := range p.Intents {
			aim(&in, i, fs, coin)
			out.Intents[i] = in
		}
		out.Timed = timed(fs)
		return out
	})
	return gen.Example(int(p.Seed))
}

// differ makes a reuse intent's payload differ from every earlier payload
// sent with its key: a type-only change of the reused intent's payload
// when retype is drawn and the body has a number, else new values, else
// (a template nothing in which varies) a wrapped body. A reuse that sent
// the same bytes would be a retry, and a correct service would replay it.
func differ(t *rapid.T, in *driver.Intent, prev []driver.Intent, rq requestSpec, retype bool, i int) {
	var earlier [][]byte
	for _, x := range prev {
		if x.Key == in.Key && x.Tenant == in.Tenant {
			earlier = append(earlier, x.Body)
		}
	}
	fresh := func() bool {
		rq.render(in)
		for _, b := range earlier {
			if bytes.Equal(b, in.Body) {
				return false
			}
		}
		return true
	}
	// A type-only change is made from the key's first use, the payload the
	// service stored: from a later reuse (refused, never stored) it would
	// differ in more than a type.
	var first *driver.Intent
	for k := range prev {
		if prev[k].Key == in.Key && prev[k].Tenant == in.Tenant {
			first = &prev[k]
			break
		}
	}
	if retype && first != nil && first.Variant == "" {
		in.Vars = first.Vars
		for _, v := range retypedVariants {
			if in.Variant = v; fresh() {
				return
			}
		}
	}
	in.Variant = ""
	for try := 0; try < 8; try++ {
		if fresh() {
			return
		}
		in.Vars = drawVars(t, i)
	}
	for n := i + 1; ; n += 1000 {
		if in.Variant = driver.VariantWrapped(n); fresh() {
			return
		}
	}
}

// drawVars draws the template values of intent i.
func drawVars(t *rapid.T, i int) map[string]string {
	return map[string]string{
		"n":      strconv.Itoa(i + 1),
		"sku":    rapid.SampledFrom([]string{"A-100", "B-200", "C-300", "D-400"}).Draw(t, "sku"),
		"qty":    strconv.Itoa(rapid.IntRange(1, 5).Draw(t, "qty")),
		"amount": strconv.Itoa(100 * rapid.IntRange(1, 500).Draw(t, "amount")),
		"uuid":   fmt.Sprintf("%016x", rapid.Uint64().Draw(t, "uuid")),
	}
}

// hits decides whether an aimed fault's "when" picks intent i.
func hits(w scenarios.When, i int, coin func(float64, string) bool) bool {
	switch {
	case w.Nth > 0:
		return (i+1)%w.Nth == 0
	case w.Fraction > 0:
		return coin(w.Fraction, "aim")
	}
	return i == 0 // neither: the first intent
}

// mix is splitmix64's finaliser: it spreads rapid's small-biased draws
// uniformly, so a configured rate is the rate one gets.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Describe prints the plan for humans (`idemchaos plan`, shrink reports).
func (p Plan) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d intents", p.Seed, len(p.Intents))
	if p.Note != "" {
		fmt.Fprintf(&b, " (%s)", p.Note)
	}
	if len(p.Timed) > 0 {
		fmt.Fprintf(&b, ", %d timed faults", len(p.Timed))
	}
	b.WriteString("\n")
	for _, in := range p.Intents {
		if p.Client {
			fmt.Fprintf(&b, "  %-6s tenant %-3s body %s", in.ID, in.Tenant, in.Body)
		} else {
			fmt.Fprintf(&b, "  %-6s tenant %-3s key %-14s at %-6s %s %s body %s", in.ID, in.Tenant, in.Key, in.At, in.Method, in.Path, in.Body)
		}
		if in.Variant != "" {
			fmt.Fprintf(&b, "  (%s)", in.Variant)
		}
		if in.State != "" {
			fmt.Fprintf(&b, "  %s → %s", in.Resource, in.State)
		}
		if in.Forged {
			b.WriteString("  forged signature, sent once")
		}
		if in.Clicks > 1 {
			if in.Together {
				fmt.Fprintf(&b, "  double-click ×%d together", in.Clicks)
			} else {
				fmt.Fprintf(&b, "  double-click ×%d within %s", in.Clicks, in.Spread)
			}
		}
		if len(in.Faults) > 0 {
			keys := make([]int, 0, len(in.Faults))
			for k := range in.Faults {
				keys = append(keys, k)
			}
			sort.Ints(keys)
			for _, k := range keys {
				if k == 0 {
					fmt.Fprintf(&b, "  every attempt: %s", strings.SplitN(in.Faults[k], "#", 2)[0])
					continue
				}
				fmt.Fprintf(&b, "  attempt %d: %s", k, strings.SplitN(in.Faults[k], "#", 2)[0])
			}
		}
		b.WriteString("\n")
	}
	for _, tf := range p.Timed {
		fmt.Fprintf(&b, "  fault %s at %s", tf.Kind, tf.At)
		if p.Client {
			b.WriteString(" on every intent's attempts")
		}
		if tf.For > 0 {
			fmt.Fprintf(&b, " for %s", tf.For)
		} else {
			b.WriteString(" until the step ends")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Plans returns the plan of every step of s for a seed — what a run with
// that seed would send — without starting anything (`idemchaos plan`).
func Plans(s *scenarios.Scenario, seed int64) ([]Plan, error) {
	steps, err := resolveSteps(s, seed, "", nil, nil)
	if err != nil {
		return nil, err
	}
	out := make([]Plan, 0, len(steps))
	var prev Plan
	for i := range steps {
		st := &steps[i]
		var p Plan
		if ws := st.webhook; ws != nil && ws.reference {
			p = Plan{Seed: st.seed, Note: fmt.Sprintf("a provider's events (%s) for each order created so far, POST %s, treated as the seed draws when the orders are known",
				strings.Join(ws.events, ", "), ws.w.Path)}
		} else if ws != nil {
			var err error
			if p, err = ws.stepPlan(st, ""); err != nil {
				return nil, err
			}
		} else if cb := st.callbacks; cb != nil {
			// Known only at run time, from the orders the steps before made.
			d := callbackDefaults(*cb)
			p = Plan{Seed: st.seed, Note: fmt.Sprintf("one %s callback (POST %s) per order created so far, each delivered %d times within %s",
				d.Status, d.Path, d.Deliveries, d.Spread)}
		} else {
			p = st.draw(prev)
		}
		out, prev = append(out, p), p
	}
	return out, nil
}

// newBuiltFault reads, once, what the harness needs to know of a fault's
// kind from its optional interfaces.
func newBuiltFault(spec scenarios.FaultSpec, f faults.Fault) builtFault {
	picks := spec.When.Fraction > 0 || spec.When.Nth > 0
	return builtFault{spec: spec, fault: f, aimed: faults.IsAimed(f, picks), attempts: faults.AttemptsOf(f)}
}

// buildFaults builds the faults of step i: fresh values, since a fault may
// keep state while it runs.
func buildFaults(s *scenarios.Scenario, i int) ([]builtFault, error) {
	steps := s.EffectiveSteps()
	return buildSpecs(steps[i].Faults, i, len(steps))
}

// StepFaultIDs names the faults of step i of s as a plan does
// ("<kind>#<index>": Intent.Faults, and a TimedFault's Kind and Fault),
// the aimed ones apart from the timed ones: what a saved plan may name
// (`run --plan` checks one against them).
func StepFaultIDs(s *scenarios.Scenario, i int) (aimed, timed []string, err error) {
	if n := len(s.EffectiveSteps()); i >= n {
		return nil, nil, fmt.Errorf("scenario %s has no step %d", s.Name, i+1)
	}
	fs, err := buildFaults(s, i)
	if err != nil {
		return nil, nil, err
	}
	for fi, f := range fs {
		if f.aimed {
			aimed = append(aimed, faultID(f.spec.Kind, fi))
		} else {
			timed = append(timed, faultID(f.spec.Kind, fi))
		}
	}
	return aimed, timed, nil
}

// buildSpecs builds the faults of step i of n from their specs.
func buildSpecs(specs []scenarios.FaultSpec, i, n int) ([]builtFault, error) {
	var out []builtFault
	for _, spec := range specs {
		f, err := spec.Build()
		if err != nil {
			return nil, fmt.Errorf("step %d/%d: %w", i+1, n, err)
		}
		out = append(out, newBuiltFault(spec, f))
	}
	return out, nil
}
