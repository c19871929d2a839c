package shard

import (
	"encoding/json"
	"testing"

	"github.com/idemchaos/idemchaos/report"
)

// FuzzMerge: whatever the shard reports hold, Merge never panics and
// stays bounded (counts are checked before anything is listed), and what
// it merges has only verdict words a check gives. CI runs it for a
// bounded time (test.sh).
func FuzzMerge(f *testing.F) {
	f.Add([]byte(`{"tool":"idemchaos","version":1,"verdict":"pass","runs":[{"scenario":"a","seed":1,"verdict":"pass","met":true,"steps":[]}],"shard":{"index":1,"total":1,"scenarios":["a"],"seeds":"1","pairs":1}}`),
		[]byte(`{"tool":"idemchaos","version":1,"verdict":"pass","runs":[],"shard":{"index":2,"total":2,"scenarios":["a"],"seeds":"1","pairs":0}}`))
	f.Add([]byte(`{"tool":"idemchaos","version":1,"verdict":"banana","runs":[],"shard":{"index":1,"total":99999999999,"scenarios":["a","b"],"seeds":"1-1000","pairs":0}}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var ra, rb report.Report
		if json.Unmarshal(a, &ra) != nil || json.Unmarshal(b, &rb) != nil {
			return
		}
		out, err := Merge([]report.Report{ra, rb}, []string{"a.json", "b.json"})
		if err != nil {
			return
		}
		if err := CheckVerdicts(out); err != nil {
			t.Fatalf("merged a report with %v", err)
		}
	})
}
