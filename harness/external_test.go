package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

// bodyTenantShop is a small order API written the way many are: the tenant
// in the JSON body, order ids numbered per tenant (so two tenants have an
// order 1), an effects endpoint. It keys idempotency by (tenant, key) and,
// when loose, executes a reused key's new payload as a new order instead
// of rejecting it.
type bodyTenantShop struct {
	loose bool

	mu      sync.Mutex
	next    map[string]int
	records map[string]record
	orders  []map[string]any
	mislaid int // requests whose body named no tenant
}

type record struct {
	body string
	resp []byte
}

func newShop(loose bool) *bodyTenantShop {
	return &bodyTenantShop{loose: loose, next: map[string]int{}, records: map[string]record{}}
}

func (s *bodyTenantShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodGet && r.URL.Path == "/effects" {
		_ = json.NewEncoder(w).Encode(map[string]any{"orders": s.orders})
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Tenant string `json:"tenant"`
	}
	if json.Unmarshal(raw, &body) != nil || body.Tenant == "" {
		s.mislaid++
		http.Error(w, `{"error":"tenant required"}`, http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	scope := body.Tenant + "/" + key
	if rec, ok := s.records[scope]; ok && (rec.body == string(raw) || !s.loose) {
		w.Header().Set("Content-Type", "application/json")
		if rec.body != string(raw) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"error":"key reused"}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write(rec.resp)
		return
	}
	s.next[body.Tenant]++
	id := s.next[body.Tenant]
	s.orders = append(s.orders, map[string]any{"tenant": body.Tenant, "key": key, "id": id})
	resp := []byte(fmt.Sprintf(`{"order_id":%d,"tenant":%q}`, id, body.Tenant))
	s.records[scope] = record{string(raw), resp}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(resp)
}

func runExternal(t *testing.T, yaml string, h http.Handler) *harness.Outcome {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	o, err := runOn(t, srv.URL, yaml, 3)
	if err != nil {
		t.Fatal(err)
	}
	sameOffline(t, o)
	return o
}

// runOn runs yaml, its SERVICE the URL given, once at seed against the
// service there.
func runOn(t *testing.T, url, yaml string, seed int64) (*harness.Outcome, error) {
	t.Helper()
	s, err := scenarios.Parse(t.Name()+".yaml", []byte(strings.ReplaceAll(yaml, "SERVICE", url)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{TargetURL: url, Scenarios: []*scenarios.Scenario{s}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeEnv(ctx) })
	r.HistoryDir = t.TempDir()
	return r.Run(ctx, s, harness.RunOptions{Seed: seed})
}

// shopEndpoint and shopEffects are how a scenario reaches the shop at
// SERVICE and reads its orders.
const (
	shopEndpoint = `
target: {url: SERVICE}
endpoint:
  path: /orders
  body: '{"tenant":"{{tenant}}","sku":"{{sku}}","qty":{{qty}}}'
  tenant: {in: body}
`
	shopEffects = `
effects:
  oracle: http
  url: SERVICE/effects
  items: $.orders[*]
  tenant: $.tenant
  key: $.key
  id: $.id
  response_id: $.order_id
`
)

const shopScenario = shopEndpoint + `traffic: {intents: 24, tenants: 3, concurrency: 4, reuse: 0.3, shared_keys: 0.3}` + shopEffects + `invariants: [exactly-once, tenant-isolation]
`

// A correct tenant-in-body service is clean, whatever keys the plan shares
// across tenants: before, a body rendered before its tenant was swapped
// named another tenant, and the service's effects looked like a leak.
func TestRun_TenantInBodyServiceIsClean(t *testing.T) {
	t.Parallel()
	shop := newShop(false)
	o := runExternal(t, shopScenario, shop)
	if !o.Met() {
		t.Fatalf("a correct service judged %s: %+v", o.Verdict(), o.Steps[0].Result)
	}
	if shop.mislaid != 0 || len(shop.orders) == 0 {
		t.Fatalf("%d requests without a tenant, %d orders", shop.mislaid, len(shop.orders))
	}
	perTenant := map[string]int{}
	for _, e := range o.History.Effects {
		perTenant[e.ID]++
	}
	if perTenant["1"] < 2 {
		t.Fatalf("effect ids %v: the test needs an id two tenants share", perTenant)
	}
	if got := len(o.History.Effects); got != len(shop.orders) {
		t.Errorf("history holds %d effects, the service made %d: effects are one per (tenant, id)", got, len(shop.orders))
	}
}

// When the acknowledgement names the order and the oracle reports that
// id, the effect is attributed to exactly the intent that was acknowledged,
// even when a loose service executed two intents under one key.
func TestRun_EffectsAttributedByResponseID(t *testing.T) {
	t.Parallel()
	shop := newShop(true)
	o := runExternal(t, shopScenario, shop)
	attributed, shared := 0, 0
	byScope := map[string]map[string]bool{}
	for _, e := range o.History.Effects {
		if e.Intent == "" {
			t.Errorf("effect %s/%s has no intent", e.Tenant, e.ID)
			continue
		}
		attributed++
		scope := e.Tenant + "/" + e.Key
		if byScope[scope] == nil {
			byScope[scope] = map[string]bool{}
		}
		byScope[scope][e.Intent] = true
	}
	for _, in := range byScope {
		if len(in) > 1 {
			shared++
		}
	}
	if attributed == 0 || shared == 0 {
		t.Fatalf("%d effects attributed, %d keys with effects of several intents: the test proved nothing", attributed, shared)
	}
}

func loadFile(t *testing.T, path string) *history.History {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.Load(f, history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A run without an oracle did not read effects, and its history says so:
// exactly-once then cannot blame an acknowledged intent for having none.
// Before, "oracle: none" wrote effects_recorded: true.
func TestRun_NoOracleRecordsEffectsUnread(t *testing.T) {
	t.Parallel()
	yaml := strings.Replace(shopScenario, shopEffects, "\neffects: {oracle: none}\n", 1)
	o := runExternal(t, yaml, newShop(false))
	h := loadFile(t, o.HistoryPath)
	if h.EffectsKnown || o.History.EffectsKnown || !h.Meta.EffectsUnread {
		t.Fatal("a run without an oracle does not say its effects were not read")
	}
	for _, r := range o.Steps[0].Result.Results {
		if r.Name == "exactly-once" && r.Verdict == checkers.Violated {
			t.Errorf("exactly-once blamed a service whose effects were never read: %v", r.Violations)
		}
	}
	// With an oracle, the finished run's history says its effects were read.
	o = runExternal(t, shopScenario, newShop(false))
	if h := loadFile(t, o.HistoryPath); !h.EffectsKnown || len(h.Effects) == 0 {
		t.Fatalf("a finished run with an oracle: effects known %v, %d effects", h.EffectsKnown, len(h.Effects))
	}
}

// A service that stops answering once the run begins — a single-threaded
// server held by one kept-open connection — fails the oracle's read after
// the traffic too. The run is the target's environment error, said as
// such, not an accusation of the oracle the newcomer configured right.
func TestRun_UnansweredTargetIsNamedBeforeItsOracle(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32
	stuck := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && reads.Add(1) == 1 {
			fmt.Fprint(w, `{"orders":[]}`)
			return
		}
		if r.Method == http.MethodGet {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		select { // a POST is never answered
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stuck) }) // first: the held POSTs end, then srv closes
	_, err := runOn(t, srv.URL, shopEndpoint+shopEffects+`traffic: {intents: 3, timeout: 200ms, retry: {max_attempts: 2}}
invariants: [exactly-once]
`, 1)
	if err == nil || !strings.HasPrefix(strings.TrimPrefix(err.Error(), harness.ErrSetup.Error()+": "), "the target answered none of the run's") ||
		!strings.Contains(err.Error(), "the effect oracle's read then failed too") {
		t.Fatalf("err %v: want the target named first, then the oracle", err)
	}
	if n := reads.Load(); n < 2 {
		t.Fatalf("the oracle read %d times: the read after the traffic never happened", n)
	}
}

// A run interrupted while it sends keeps a history that says its effects
// were not read (they were not). Before, it said effects_recorded: true,
// and a later check reported every acknowledged intent without effect.
func TestRun_InterruptedRunRecordsEffectsUnread(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shop := newShop(false)
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			shop.mu.Lock()
			n := len(shop.orders)
			shop.mu.Unlock()
			if n >= 3 {
				once.Do(cancel) // Ctrl-C, mid-step
			}
		}
		shop.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s, err := scenarios.Parse("interrupted.yaml", []byte(strings.ReplaceAll(shopScenario, "SERVICE", srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	r, closeEnv, err := harness.Open(context.Background(), harness.OpenOptions{TargetURL: srv.URL, Scenarios: []*scenarios.Scenario{s}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeEnv(context.Background())
	r.HistoryDir = t.TempDir()
	o, err := r.Run(ctx, s, harness.RunOptions{Seed: 3})
	if err == nil || o == nil || o.HistoryPath == "" {
		t.Fatalf("an interrupted run: err %v, outcome %v", err, o)
	}
	h := loadFile(t, o.HistoryPath)
	if len(h.Attempts) == 0 {
		t.Fatal("the interrupted run kept no attempts: the test proved nothing")
	}
	if h.EffectsKnown {
		t.Fatal("the history of an interrupted run claims its effects were recorded")
	}
}

// The contract a run judged by is in its history, so that `check` judges
// a kept history the same way: the profile, the expected fingerprint and
// the scenario's decision bound.
func TestRun_HistoryCarriesTheContract(t *testing.T) {
	t.Parallel()
	yaml := shopScenario + `contract: {profile: stripe, fingerprint: canonical}
`
	yaml = strings.Replace(yaml, "invariants: [exactly-once, tenant-isolation]", "invariants: [exactly-once, {name: eventually-decided, bound: 3s}]", 1)
	o := runExternal(t, yaml, newShop(false))
	h := loadFile(t, o.HistoryPath)
	c := h.Meta.Contract
	if c == nil {
		t.Fatal("the history has no contract")
	}
	if c.Profile != "stripe" || c.Reuse != 400 || c.Fingerprint != "canonical" || c.DecisionBoundMS != 3000 {
		t.Errorf("contract %+v; want stripe (reuse 400), canonical, bound 3000ms", *c)
	}
	if !h.EffectsKnown {
		t.Error("the finished run's meta says its effects were not read")
	}
}

// TestExternalEnv_MovesTheEffectsURLAndReplaysTheTarget: a Go test of a
// service on another port than its scenario says (ExternalEnv, as
// --target) reads the effects on that service too — before, the oracle
// still read the scenario's old origin and the correct service was
// accused — and the replay command of a failure names the target.
func TestExternalEnv_MovesTheEffectsURLAndReplaysTheTarget(t *testing.T) {
	t.Parallel()
	// The scenario's own origin: a loopback port nothing listens on.
	dead := "http://127.0.0.1:9"
	yaml := strings.Replace(shopScenario, "invariants: [exactly-once, tenant-isolation]", "invariants: [exactly-once, tenant-isolation, reuse-rejected]", 1)
	s, err := scenarios.Parse("moved.yaml", []byte(strings.ReplaceAll(yaml, "SERVICE", dead)))
	if err != nil {
		t.Fatal(err)
	}
	for name, loose := range map[string]bool{"correct": false, "loose": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(newShop(loose))
			t.Cleanup(srv.Close)
			tb := &fakeTB{}
			harness.Test(tb, harness.Case{Env: harness.ExternalEnv(srv.URL), NoInvestigate: true,
				Steps: []harness.Step{{Inline: s, Seed: 3}}})
			tb.done()
			got := strings.Join(tb.errors, "\n")
			switch {
			case !loose && got != "":
				t.Fatalf("a correct service on the moved target failed:\n%s", got)
			case loose && !strings.Contains(got, "--target "+srv.URL):
				t.Fatalf("the replay does not name the target %s:\n%s", srv.URL, got)
			}
			if s.Target.URL != dead || s.Effects.URL != dead+"/effects" {
				t.Errorf("the caller's inline scenario was changed: %s, %s", s.Target.URL, s.Effects.URL)
			}
		})
	}
}
