package harness

import (
	"strings"
	"sync"

	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/history"
)

// acks remembers which intent each acknowledged response named as the
// resource it created (effects.response_id), so that an effect with that
// id is attributed to exactly that intent, not to whichever intents share
// its tenant and key. It watches the history as it is written.
type acks struct {
	pick func([]byte) (string, bool)

	mu      sync.Mutex
	invokes map[int64][2]string           // op → intent, tenant
	named   map[[2]string]map[string]bool // (tenant, id) → intents whose 2xx named it
}

// newAcks returns nil when the scenario names no response id.
func newAcks(expr string) (*acks, error) {
	if expr == "" {
		return nil, nil
	}
	pick, err := oracle.ResponseID(expr)
	if err != nil {
		return nil, err
	}
	return &acks{pick: pick, invokes: map[int64][2]string{}, named: map[[2]string]map[string]bool{}}, nil
}

// event is a recorder sink: it must not block, and reads e at once.
func (a *acks) event(e *history.Event) {
	switch e.Type {
	case history.TypeInvoke:
		a.mu.Lock()
		a.invokes[e.Op] = [2]string{e.Intent, e.Tenant}
		a.mu.Unlock()
	case history.TypeOK:
		if e.Resp == nil || e.Resp.Status/100 != 2 {
			return
		}
		id, ok := a.pick(e.Resp.Body)
		if !ok || id == "" {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		inv, ok := a.invokes[e.Op]
		if !ok || inv[0] == "" {
			return
		}
		k := [2]string{inv[1], id}
		if a.named[k] == nil {
			a.named[k] = map[string]bool{}
		}
		a.named[k][inv[0]] = true
	}
}

// intentOf is the one intent whose acknowledgement named the effect
// (tenant, id), or "". An id is matched as the oracle reports it or,
// for "<kind> <id>" effect ids, by its id part. Two intents naming one
// resource (one was served the other's replay) attribute it to neither:
// the effect then falls back to its tenant and key.
func (a *acks) intentOf(tenant, id string) string {
	if a == nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cands := []string{id}
	if _, rest, ok := strings.Cut(id, " "); ok {
		cands = append(cands, rest)
	}
	for _, c := range cands {
		if in := a.named[[2]string{tenant, c}]; len(in) == 1 {
			for intent := range in {
				return intent
			}
		}
	}
	return ""
}
