package harness

import (
	"bytes"
	"fmt"
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
func generatePlan(seed int64, tr scenarios.Traffic, ep scenarios.Endpoint, fs []builtFault, tenants []string, prefix, keyPrefix string) Plan {
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
				Method: ep.Method, Path: ep.Path,
				At:     time.Duration(rapid.Int64Range(0, spread).Draw(t, "at")) * time.Millisecond,
				Client: i%max(tr.Concurrency, 1) + 1,
			}
			in.Body = fillBody(ep.Body, in, t, i)
			if i > 0 && coin(tr.Collisions, "collision") {
				j := rapid.IntRange(0, i-1).Draw(t, "collides-with")
				in.Tenant, in.Body = p.Intents[j].Tenant, p.Intents[j].Body
			} else if i > 0 && coin(tr.Reuse, "reuse") {
				j := rapid.IntRange(0, i-1).Draw(t, "reuses")
				in.Tenant, in.Key = p.Intents[j].Tenant, p.Intents[j].Key
				if bytes.Equal(in.Body, p.Intents[j].Body) {
					in.Body = reusedBody(p.Intents[j].Body, i)
				}
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
						in.Tenant, in.Key, in.Body = tn, p.Intents[j].Key, p.Intents[j].Body
						break
					}
				}
			}
			for fi, f := range fs {
				if !f.aimed || !hits(f.spec.When, i, coin) {
					continue
				}
				if c, ok := f.fault.(faults.Clicker); ok {
					in.Clicks, in.Spread = c.Clicks()
					continue
				}
				if in.Faults == nil {
					in.Faults = map[int]string{}
				}
				first := max(f.spec.When.Attempt, 1)
				for a := first; a < first+f.attempts; a++ {
					in.Faults[a] = faultID(f.spec.Kind, fi)
				}
			}
			p.Intents = append(p.Intents, in)
			if coin(tr.Duplicates, "duplicate") {
				d := in
				d.Faults, d.Clicks = nil, 0
				d.At = in.At + time.Duration(rapid.Int64Range(spread/2+50, spread+100).Draw(t, "resubmit-after"))*time.Millisecond
				dups = append(dups, d)
			}
		}
		p.Intents = append(p.Intents, dups...)
		for fi, f := range fs {
			if !f.aimed {
				p.Timed = append(p.Timed, TimedFault{Fault: fi, Kind: f.spec.Kind, At: f.spec.When.At, For: f.spec.When.For})
			}
		}
		return p
	})
	return gen.Example(int(seed))
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

// fillBody fills the endpoint's body template for one intent.
func fillBody(tmpl string, in driver.Intent, t *rapid.T, i int) []byte {
	r := strings.NewReplacer(
		"{{intent}}", in.ID,
		"{{tenant}}", in.Tenant,
		"{{n}}", strconv.Itoa(i+1),
		"{{sku}}", rapid.SampledFrom([]string{"A-100", "B-200", "C-300", "D-400"}).Draw(t, "sku"),
		"{{qty}}", strconv.Itoa(rapid.IntRange(1, 5).Draw(t, "qty")),
		"{{amount}}", strconv.Itoa(100*rapid.IntRange(1, 500).Draw(t, "amount")),
		"{{uuid}}", fmt.Sprintf("%016x", rapid.Uint64().Draw(t, "uuid")),
	)
	return []byte(r.Replace(tmpl))
}

// reusedBody is a payload that differs from orig: what a client that reuses
// a key for something else sends.
func reusedBody(orig []byte, i int) []byte {
	if len(orig) > 1 && orig[0] == '{' && orig[len(orig)-1] == '}' {
		return []byte(fmt.Sprintf(`{"reused_by":%d,"was":%s}`, i+1, orig))
	}
	return append(append([]byte{}, orig...), fmt.Sprintf(" (reused by %d)", i+1)...)
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
		fmt.Fprintf(&b, "  %-6s tenant %-3s key %-14s at %-6s %s %s body %s", in.ID, in.Tenant, in.Key, in.At, in.Method, in.Path, in.Body)
		if in.Clicks > 1 {
			fmt.Fprintf(&b, "  double-click ×%d within %s", in.Clicks, in.Spread)
		}
		if len(in.Faults) > 0 {
			keys := make([]int, 0, len(in.Faults))
			for k := range in.Faults {
				keys = append(keys, k)
			}
			sort.Ints(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "  attempt %d: %s", k, strings.SplitN(in.Faults[k], "#", 2)[0])
			}
		}
		b.WriteString("\n")
	}
	for _, tf := range p.Timed {
		fmt.Fprintf(&b, "  fault %s at %s", tf.Kind, tf.At)
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
	steps := s.EffectiveSteps()
	out := make([]Plan, 0, len(steps))
	for i, st := range steps {
		fs, err := buildFaults(s, i)
		if err != nil {
			return nil, err
		}
		if st.Resend && i > 0 {
			out = append(out, resendPlan(out[i-1]))
			continue
		}
		if cb := st.Callbacks; cb != nil {
			d := callbackDefaults(*cb)
			out = append(out, Plan{Seed: seed + int64(i), Note: fmt.Sprintf("one %s callback (POST %s) per order created so far, each delivered %d times within %s",
				d.Status, d.Path, d.Deliveries, d.Spread)})
			continue
		}
		out = append(out, generatePlan(seed+int64(i), stepTraffic(s, st), s.Endpoint, fs, tenantsOf(s), stepPrefix(i), ""))
	}
	return out, nil
}

// buildFaults builds the faults of step i: fresh values, since a fault may
// keep state while it runs.
func buildFaults(s *scenarios.Scenario, i int) ([]builtFault, error) {
	steps := s.EffectiveSteps()
	var out []builtFault
	for _, spec := range steps[i].Faults {
		f, err := spec.Build()
		if err != nil {
			return nil, fmt.Errorf("step %d/%d: %w", i+1, len(steps), err)
		}
		picks := spec.When.Fraction > 0 || spec.When.Nth > 0
		out = append(out, builtFault{spec: spec, fault: f, aimed: faults.IsAimed(f, picks), attempts: faults.AttemptsOf(f)})
	}
	return out, nil
}
