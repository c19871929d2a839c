package checkers_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// shared is a history the goldens do not have: a key used on two endpoints
// and by two tenants, invokes recorded out of time order, requests without
// a key, an intent under two keys, effects with and without an intent, a
// producer that repeated an op.
const shared = `{"type":"meta","v":1,"scenario":"shared","seed":1,"effects_recorded":true}
{"type":"invoke","op":1,"intent":"a","tenant":"t1","key":"k","ns":5000000,"req":{"method":"POST","path":"/v1/orders","body":"x"}}
{"type":"invoke","op":2,"intent":"b","tenant":"t1","key":"k","ns":1000000,"req":{"method":"POST","path":"/v1/refunds","body":"y"}}
{"type":"invoke","op":3,"intent":"a","tenant":"t1","key":"k","ns":2000000,"req":{"method":"POST","path":"/v1/orders","body":"x"}}
{"type":"invoke","op":4,"intent":"c","tenant":"t2","key":"k","ns":3000000,"req":{"method":"POST","path":"/v1/orders","body":"x"}}
{"type":"invoke","op":5,"intent":"d","tenant":"t1","ns":3500000,"req":{"method":"POST","path":"/v1/orders","body":"z"}}
{"type":"invoke","op":6,"intent":"a","tenant":"t1","key":"k2","ns":6000000,"req":{"method":"POST","path":"/v1/orders","body":"x"}}
{"type":"invoke","op":7,"intent":"e","tenant":"t1","ns":6500000,"req":{"method":"POST","path":"/v1/orders","body":"w"}}
{"type":"ok","op":1,"ns":7000000,"resp":{"status":201,"body":"{}"}}
{"type":"ok","op":2,"ns":7100000,"resp":{"status":201,"body":"{}"}}
{"type":"ok","op":6,"ns":7200000,"resp":{"status":201,"body":"{}"}}
{"type":"effect","tenant":"t1","key":"k","intent":"a","effect":"order 1","ns":8000000}
{"type":"effect","tenant":"t1","key":"k","effect":"refund 2","ns":8000000}
{"type":"effect","tenant":"t2","key":"k","intent":"c","effect":"order 3","ns":8000000}
{"type":"effect","tenant":"t1","effect":"order 4","ns":8000000}
`

// TestIndex_IsTheHistoryScanned holds the shared index (what the checks
// group and the report's timelines draw from) to a plain scan of the
// history, over every golden and a history of the cases they lack: a
// (tenant, key)'s attempts over every endpoint and an intent's, in history
// order, the effects of each, an op's attempt.
func TestIndex_IsTheHistoryScanned(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*", "*.jsonl"))
	if err != nil || len(files) < 50 {
		t.Fatalf("goldens: %d (%v)", len(files), err)
	}
	texts := map[string]string{"shared": shared}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	joined := false
	for name, text := range texts {
		h, err := history.Load(strings.NewReader(text), history.LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ix := checkers.NewIndex(h)
		scan := func(keep func(i int) bool) []int32 {
			var out []int32
			for i := range h.Attempts {
				if keep(i) {
					out = append(out, int32(i))
				}
			}
			return out
		}
		same := func(what string, got, want []int32) {
			t.Helper()
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s = %v, want %v", name, what, got, want)
			}
		}
		// The report's (tenant, key)s and intents, and the effects of each.
		for i := range h.Attempts {
			a := h.Attempts[i]
			byKey := scan(func(j int) bool { return h.Attempts[j].Tenant == a.Tenant && h.Attempts[j].Key == a.Key })
			same("tenant "+a.Tenant+" key "+a.Key, ix.KeyAttempts(a.Tenant, a.Key), byKey)
			same("intent "+a.Intent, ix.IntentAttempts(a.Intent), scan(func(j int) bool { return h.Attempts[j].Intent == a.Intent }))
			if j, ok := ix.AttemptOf(a.Op); !ok || h.Attempts[j].Op != a.Op || slices.ContainsFunc(h.Attempts[j+1:], func(b history.Attempt) bool { return b.Op == a.Op }) {
				t.Errorf("%s: op %d is attempt %d (%v), want its last", name, a.Op, j, ok)
			}
			var effKey, effInt []int32
			for k, e := range h.Effects {
				if e.Tenant == a.Tenant && e.Key == a.Key {
					effKey = append(effKey, int32(k))
				}
				if e.Intent != "" && e.Intent == a.Intent {
					effInt = append(effInt, int32(k))
				}
			}
			same("effects of key "+a.Key, ix.KeyEffects(a.Tenant, a.Key), effKey)
			same("effects of intent "+a.Intent, ix.IntentEffects(a.Intent), effInt)
			if a.Key != "" && slices.ContainsFunc(byKey, func(j int32) bool { return h.Attempts[j].Path != a.Path }) {
				joined = true
			}
		}
		if got := ix.IntentAttempts("no such intent"); got != nil {
			t.Errorf("%s: an unknown intent has attempts %v", name, got)
		}
	}
	if !joined {
		t.Error("no (tenant, key) spanned two endpoints: the join of scopes went untested")
	}
}

// The index is asked from several goroutines at once (the checks of a
// contract run side by side): every grouping is built once and the same.
func TestIndex_ConcurrentUse(t *testing.T) {
	t.Parallel()
	h, err := history.Load(strings.NewReader(shared), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ix := checkers.NewIndex(h)
	var wg sync.WaitGroup
	got := make([][]int32, 8)
	for n := range got {
		wg.Go(func() {
			got[n] = slices.Concat(ix.KeyAttempts("t1", "k"), ix.IntentAttempts("a"), ix.KeyEffects("t1", "k"))
		})
	}
	wg.Wait()
	for n := range got {
		if !slices.Equal(got[n], got[0]) || len(got[0]) != 3+3+2 {
			t.Fatalf("goroutine %d saw %v, goroutine 0 %v", n, got[n], got[0])
		}
	}
}
