package checkers

import (
	"fmt"
	"strings"

	"github.com/idemchaos/idemchaos/history"
)

// ReplayIdentical returns the checker of "replay-identical": every successful
// response for one (tenant, endpoint, key) and one payload is byte-identical
// in status and body, and in the configured headers (default Content-Type).
func ReplayIdentical(opts ...Option) Checker { return replayIdentical{newConfig(opts)} }

type replayIdentical struct{ cfg config }

var _ Checker = replayIdentical{}

func (replayIdentical) Name() string { return "replay-identical" }

func (c replayIdentical) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects))
}

func (c replayIdentical) check(ix *index) Result {
	h := ix.h
	r := Result{Name: c.Name()}
	order, groups := ix.byScope()
	// The first success of each payload is the response every replay of
	// that payload must repeat. Payloads are few per key.
	type payload struct {
		hash  uint64
		first int32
		bad   []int32
	}
	var buf [4]payload
	for g, s := range order {
		idx := groups[g]
		ps := buf[:0]
		for _, i := range idx {
			a := &h.Attempts[i]
			if classify(a, c.cfg.profile) != succeeded {
				continue
			}
			r.Checked++
			j := 0
			for j < len(ps) && ps[j].hash != a.ReqHash {
				j++
			}
			if j == len(ps) {
				ps = append(ps, payload{hash: a.ReqHash, first: i})
				continue
			}
			if c.differs(&h.Attempts[ps[j].first], a) != "" {
				ps[j].bad = append(ps[j].bad, i)
			}
		}
		for _, p := range ps {
			if len(p.bad) > 0 {
				r.Violations = append(r.Violations, c.violation(h, s, p.first, p.bad))
			}
		}
	}
	return finish(r, h, "")
}

// differs says how b differs from a, or "" when it is a faithful replay.
func (c replayIdentical) differs(a, b *history.Attempt) string {
	if a.Status != b.Status {
		return fmt.Sprintf("status %d instead of %d", b.Status, a.Status)
	}
	if a.RespLen != b.RespLen || a.RespHash != b.RespHash {
		if b.RespLen == 0 {
			return "an empty body instead of " + quoteBody(a)
		}
		return fmt.Sprintf("body %s instead of %s", quoteBody(b), quoteBody(a))
	}
	for _, name := range c.cfg.headers {
		va, oka := a.RespHeaders.Get(name)
		vb, okb := b.RespHeaders.Get(name)
		if va != vb || oka != okb {
			return fmt.Sprintf("header %s %q instead of %q", name, vb, va)
		}
	}
	return ""
}

func (c replayIdentical) violation(h *history.History, s scope, first int32, bad []int32) Violation {
	a, b := &h.Attempts[first], &h.Attempts[bad[0]]
	ops := append([]int64{a.Op}, opsOf(h, bad)...)
	diff := c.differs(a, b)
	v := Violation{
		Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: b.Intent, Ops: ops,
		Explanation: fmt.Sprintf("%s: the first success (op %d, %d) was answered differently on replay: op %d got %s; every replay must repeat the first response byte for byte.",
			describeScope(s), a.Op, a.Status, b.Op, diff),
	}
	switch {
	case b.RespLen == 0 && a.RespLen > 0:
		v.Cause = "the replay returns an empty body: the first response was not stored, so a client that lost it never learns the order id (empty replay)"
	case strings.HasPrefix(diff, "body"):
		v.Cause = "the replay rebuilt the response instead of returning the stored bytes (ids or timestamps regenerated on replay)"
	case strings.HasPrefix(diff, "header"):
		v.Cause = "the replay does not restore the stored headers"
	default:
		v.Cause = "the replay does not restore the stored status"
	}
	return v
}
