package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

// Started second: long, and needing no attribution, it keeps another
// processor busy while exactly-once builds it.
func init() {
	Register(Registration{Name: "tenant-isolation", New: TenantIsolation, Suites: map[string]int{SuiteServer: 5}, Start: 2})
}

// TenantIsolation returns the checker of "tenant-isolation": no response to
// tenant B is a response that was produced for tenant A.
//
// A response is recognised by a hash of its body. Only bodies that identify
// one execution count: a non-empty 2xx body that each tenant received under a
// single key. A generic body ({"ok":true}) that any one tenant received under
// several keys proves nothing and is ignored, whichever tenant saw it first.
func TenantIsolation(opts ...Option) Checker { return tenantIsolation{newConfig(opts)} }

type tenantIsolation struct{ cfg config }

var _ Checker = tenantIsolation{}

func (tenantIsolation) Name() string { return "tenant-isolation" }

type bodyOwner struct {
	first   int32 // first attempt that received the body
	generic bool  // some tenant received it under more than one key
}

func (c tenantIsolation) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c tenantIsolation) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	// owners maps a body hash to its entry in bodies, one slice for all.
	owners := make(map[uint64]int32, len(h.Attempts))
	bodies := make([]bodyOwner, 0, len(h.Attempts))
	// others maps a body that other tenants received too to each such
	// tenant's first key for it (rare: kept apart from bodies).
	var others map[int32]map[string]string
	// cands are the attempts that received a body first received by
	// another tenant, in history order: only they can be leaks. Which
	// tenant first received a body never changes, so the first pass finds
	// them all; whether the body turned out generic is known after it.
	var cands []int32
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if classify(a, c.cfg.profile()) != succeeded || a.RespLen == 0 {
			continue
		}
		r.Checked++
		b, ok := owners[a.RespHash]
		if !ok {
			owners[a.RespHash] = int32(len(bodies))
			bodies = append(bodies, bodyOwner{first: int32(i)})
			continue
		}
		o := &bodies[b]
		f := &h.Attempts[o.first]
		if f.Tenant != a.Tenant {
			cands = append(cands, int32(i))
		}
		switch {
		case o.generic:
		case f.Tenant == a.Tenant:
			o.generic = f.Key != a.Key
		case others[b] == nil:
			if others == nil {
				others = make(map[int32]map[string]string)
			}
			others[b] = map[string]string{a.Tenant: a.Key}
		default:
			if k, ok := others[b][a.Tenant]; !ok {
				others[b][a.Tenant] = a.Key
			} else if k != a.Key {
				o.generic = true
			}
		}
	}
	// A tenant whose key has an effect of its own was served by an
	// execution made for it: a body equal to another tenant's is then a
	// coincidence (services number orders per tenant: both get
	// {"order_id":2}), not a leak. The map of executed keys is built on
	// the first candidate that needs it: a clean history has none.
	var did func(tenantKey) bool
	if g := c.cfg.globals; g != nil && g.Executed != nil {
		// A part of a history cut by response body holds no effects.
		did = func(tk tenantKey) bool { return h.EffectsKnown && g.Executed(tk.tenant, tk.key) }
	} else {
		var executed map[tenantKey]bool
		did = func(tk tenantKey) bool {
			if executed == nil {
				executed = make(map[tenantKey]bool)
				if h.EffectsKnown {
					for _, e := range ix.effects {
						executed[tenantKey{e.Tenant, e.Key}] = true
					}
				}
			}
			return executed[tk]
		}
	}
	seen := make(map[tenantKey]bool)
	for _, i := range cands {
		a := &h.Attempts[i]
		o := &bodies[owners[a.RespHash]]
		f := &h.Attempts[o.first]
		if o.generic || seen[tenantKey{a.Tenant, a.Key}] {
			continue
		}
		switch fx, ax := did(tenantKey{f.Tenant, f.Key}), did(tenantKey{a.Tenant, a.Key}); {
		case fx && ax:
			continue
		case ax:
			// The body reached the tenant that never executed first: that
			// tenant is the one served another's response.
			f, a = a, f
		}
		seen[tenantKey{a.Tenant, a.Key}] = true
		r.Violations = append(r.Violations, Violation{
			Invariant: c.Name(), Tenant: a.Tenant, Method: a.Method, Path: a.Path, Key: a.Key, Intent: a.Intent,
			Ops: []int64{f.Op, a.Op},
			Explanation: fmt.Sprintf("tenant %s's request (op %d, key %s) got the response produced for tenant %s (op %d, key %s): body %s; a tenant must never see another tenant's response.",
				a.Tenant, a.Op, a.Key, f.Tenant, f.Op, f.Key, quoteBody(a)),
			Cause: isolationCause(f, a),
		})
	}
	return finish(r, h, "")
}

// isolationCause names the leak the evidence points to: the same key in
// two tenants is a global key space; different keys are a lookup that is
// not keyed by (tenant, key) at all.
func isolationCause(owner, leak *history.Attempt) string {
	if owner.Key == leak.Key {
		return fmt.Sprintf("idempotency keys share one global namespace instead of being scoped by tenant, so tenant %s's key %s matched tenant %s's record", leak.Tenant, leak.Key, owner.Tenant)
	}
	return fmt.Sprintf("the stored response was found by something other than (tenant, key) — the request body, a shared cache slot — since tenant %s used key %s and tenant %s key %s", leak.Tenant, leak.Key, owner.Tenant, owner.Key)
}
