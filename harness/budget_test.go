package harness_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// TestRun_BudgetRunOutIsNotAPass: a step whose request budget ran out
// before every intent was sent is unknown with a reason naming
// max_requests, never a pass on the part that ran (it said PASS).
func TestRun_BudgetRunOutIsNotAPass(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"key":"` + r.Header.Get("Idempotency-Key") + `"}`))
	}))
	defer srv.Close()
	s, err := scenarios.Parse("budget.yaml", []byte("target: {url: '"+srv.URL+"'}\neffects: {oracle: none}\n"+
		"invariants: [replay-identical, tenant-isolation]\ntraffic: {intents: 10, concurrency: 1, max_requests: 10}\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The loader refuses intents that cannot fit; a budget also runs out
	// at run time, when retries spend it. Lower it past the loader.
	s.Traffic.MaxRequests = 4
	r, closeEnv, err := harness.Open(context.Background(), harness.OpenOptions{Kind: harness.EnvExternal, TargetURL: srv.URL,
		Scenarios: []*scenarios.Scenario{s}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeEnv(context.Background())
	r.HistoryDir = t.TempDir()
	o, err := r.Run(t.Context(), s, harness.RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sameOffline(t, o)
	st := o.Steps[0]
	if !st.Stats.Budget || requests.Load() != 4 {
		t.Fatalf("budget hit %v after %d requests, want the budget of 4 spent", st.Stats.Budget, requests.Load())
	}
	if st.Result.Verdict != checkers.Unknown || !strings.Contains(st.Result.Reason, "max_requests 4") || o.Met() {
		t.Errorf("verdict %s (%q), met %v; want unknown naming max_requests", st.Result.Verdict, st.Result.Reason, o.Met())
	}
}
