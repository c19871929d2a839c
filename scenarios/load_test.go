package scenarios_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/scenarios"
)

func mustParse(tb testing.TB, src string) *scenarios.Scenario {
	tb.Helper()
	s, err := scenarios.Parse("inline.yaml", []byte(src))
	if err != nil {
		tb.Fatalf("Parse: %v", err)
	}
	return s
}

func TestLoad_Examples(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("examples/*.yaml")
	if len(files) < 2 {
		t.Fatalf("want at least 2 examples, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			s, err := scenarios.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if s.File != f || s.Name == "" {
				t.Errorf("File %q Name %q", s.File, s.Name)
			}
			for _, st := range s.EffectiveSteps() {
				for _, fs := range st.Faults {
					if _, err := fs.Build(); err != nil {
						t.Errorf("step %s: %v", st.Name, err)
					}
				}
			}
			if _, err := s.Checker(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestLoad_MissingFile(t *testing.T) {
	t.Parallel()
	_, err := scenarios.Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || errors.Is(err, scenarios.ErrInvalid) {
		t.Fatalf("err = %v, want a read error", err)
	}
}

func TestParse_Defaults(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "target:\n  reference:\n")
	want := scenarios.Traffic{
		Intents: 20, Tenants: 2, Concurrency: 8, Spread: 200 * time.Millisecond, Client: "correct",
		Retry:   scenarios.Retry{MaxAttempts: 40, Base: 25 * time.Millisecond, Max: 500 * time.Millisecond, MaxRetryAfter: 2 * time.Second, Budget: 7 * time.Second},
		Timeout: 2 * time.Second, Deadline: 30 * time.Second, MaxRequests: 2000,
	}
	if s.Traffic != want {
		t.Errorf("traffic\n got %+v\nwant %+v", s.Traffic, want)
	}
	e := s.Endpoint
	if e.Method != "POST" || e.Path != "/v1/orders" || e.KeyHeader != "Idempotency-Key" || e.Body != `{"sku":"{{sku}}","qty":{{qty}},"amount":{{amount}}}` {
		t.Errorf("endpoint %+v", e)
	}
	if e.Headers["Content-Type"] != "application/json" || len(e.Tokens) != 2 || e.Tokens["t2"] != "tok-t2" {
		t.Errorf("headers %v tokens %v", e.Headers, e.Tokens)
	}
	if s.Name != "inline" || s.Contract.Profile != "ietf" || s.Contract.Reuse != 422 || s.Effects.Oracle != "reference" {
		t.Errorf("name %q contract %+v oracle %q", s.Name, s.Contract, s.Effects.Oracle)
	}
	r := s.Target.Reference
	if r == nil || r.Lease != time.Second || r.Retention != 24*time.Hour || r.RetryWindow != time.Hour || r.VisibilityTimeout != time.Second {
		t.Errorf("reference %+v", r)
	}
	if got := s.InvariantNames(); !slices.Equal(got, checkers.Names()) {
		t.Errorf("invariants %v", got)
	}
	steps := s.EffectiveSteps()
	if len(steps) != 1 || steps[0].Expect != "clean" || *steps[0].Traffic != s.Traffic {
		t.Errorf("implicit step %+v", steps)
	}
}

func TestParse_InvariantForms(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `
target: {reference: {}}
invariants:
  - exactly-once
  - {name: eventually-decided, bound: 3s}
  - name: replay-identical
    headers: [Content-Type, Location]
`)
	want := []scenarios.Invariant{
		{Name: "exactly-once"},
		{Name: "eventually-decided", Bound: 3 * time.Second},
		{Name: "replay-identical", Headers: []string{"Content-Type", "Location"}},
	}
	if len(s.Invariants) != 3 {
		t.Fatalf("invariants %+v", s.Invariants)
	}
	for i, w := range want {
		g := s.Invariants[i]
		if g.Name != w.Name || g.Bound != w.Bound || !slices.Equal(g.Headers, w.Headers) {
			t.Errorf("invariant %d = %+v, want %+v", i, g, w)
		}
	}
	c, err := s.CheckerContract()
	if err != nil || c.Profile.Name != "ietf" || c.DecisionBound != 3*time.Second || !slices.Equal(c.ReplayHeaders, []string{"Content-Type", "Location"}) {
		t.Errorf("CheckerContract = %+v, %v; want ietf, bound 3s, headers Content-Type and Location", c, err)
	}
}

func TestParse_StepsMergeTrafficAndInheritFaults(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `
target: {reference: {}}
traffic:
  intents: 7
  duplicates: 0.5
  retry: {max_attempts: 9, base: 10ms}
faults:
  - kind: response-drop
steps:
  - name: own
    traffic: {duplicates: 0, retry: {base: 20ms}}
    faults: []
  - traffic: {intents: 3}
`)
	steps := s.EffectiveSteps()
	own, second := steps[0], steps[1]
	if own.Traffic.Intents != 7 || own.Traffic.Duplicates != 0 || own.Traffic.Retry.MaxAttempts != 9 || own.Traffic.Retry.Base != 20*time.Millisecond {
		t.Errorf("step own traffic %+v", own.Traffic)
	}
	if len(own.Faults) != 0 {
		t.Errorf("faults: [] should mean none, got %+v", own.Faults)
	}
	if second.Name != "step-2" || second.Expect != "clean" || second.Traffic.Intents != 3 || second.Traffic.Duplicates != 0.5 {
		t.Errorf("step 2 %+v traffic %+v", second, second.Traffic)
	}
	if len(second.Faults) != 1 || second.Faults[0].Kind != "response-drop" || second.Faults[0].When.Attempt != 1 {
		t.Errorf("absent faults should inherit the scenario's, got %+v", second.Faults)
	}
}

func TestParse_AnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `
target: {reference: {}}
traffic: &base
  intents: 4
  spread: 1s
steps:
  - traffic:
      <<: *base
      intents: 9
`)
	if tr := s.Steps[0].Traffic; tr.Intents != 9 || tr.Spread != time.Second {
		t.Errorf("merged traffic %+v", tr)
	}
}

func TestParse_ContractProfiles(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src  string
		want checkers.Profile
	}{
		"default": {"target: {reference: {}}", checkers.Profile{Name: "ietf", MissingKey: 400, Reuse: 422, InFlight: 409}},
		"stripe":  {"target: {reference: {}}\ncontract: {profile: stripe}", checkers.Profile{Name: "stripe", MissingKey: 0, Reuse: 400, InFlight: 409}},
		"custom":  {"target: {reference: {}}\ncontract: {reuse: 400, in_flight: 425}", checkers.Profile{Name: "custom", MissingKey: 0, Reuse: 400, InFlight: 425}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := mustParse(t, c.src).Profile()
			if err != nil || p.Name != c.want.Name || p.MissingKey != c.want.MissingKey || p.Reuse != c.want.Reuse || p.InFlight != c.want.InFlight {
				t.Errorf("Profile() = %+v, %v; want %+v", p, err, c.want)
			}
		})
	}
}

func TestParse_FaultNodeKept(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "target: {reference: {}}\nfaults:\n  - kind: crash\n    params: {point: now}\n")
	if s.Faults[0].Node == nil {
		t.Error("FaultSpec.Node is nil; want the params node")
	}
}

// TestDocs_SkeletonIsValid keeps the annotated skeleton of docs/scenarios.md
// (the "Every field, with its default" block) a valid scenario that spells
// out the defaults: it must load, and load to the same values as a file that
// says nothing but its target.
func TestDocs_SkeletonIsValid(t *testing.T) {
	t.Parallel()
	const page = "../docs/scenarios.md"
	doc := string(readFile(t, page))
	_, rest, found := strings.Cut(doc, "## Every field, with its default")
	if !found {
		t.Fatalf("%s has no heading \"Every field, with its default\"", page)
	}
	_, block, _ := strings.Cut(rest, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	s, err := scenarios.Parse(page, []byte(block))
	if err != nil {
		t.Fatalf("the skeleton of %s does not load:\n%v", page, err)
	}
	d := mustParse(t, "target: {reference: {}}")
	if s.Traffic != d.Traffic || s.Endpoint.Body != d.Endpoint.Body || s.Contract != d.Contract || *s.Target.Reference != *d.Target.Reference {
		t.Errorf("the skeleton's values are not the defaults:\n got %+v\nwant %+v", s.Traffic, d.Traffic)
	}
}

func TestParse_ByteOrderMarkAndCRLF(t *testing.T) {
	t.Parallel()
	s := mustParse(t, "\ufefftarget:\r\n  reference: {}\r\ntraffic:\r\n  intents: 4\r\n")
	if s.Traffic.Intents != 4 {
		t.Errorf("intents = %d", s.Traffic.Intents)
	}
}
