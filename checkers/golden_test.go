package checkers_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

var update = flag.Bool("update", false, "rewrite the .golden reports of testdata/histories")

const goldenDir = "../testdata/histories"

// TestGolden_Histories walks testdata/histories/<invariant>/<case>-<verdict>.jsonl
// (see the README there) and judges each file with its invariant's checker:
//
//   - "-ok": the invariant's checker passes, and no other checker finds a
//     violation (unknown is allowed for the others: a small hand-built case
//     may leave, say, an unretried key undecidable).
//   - "-bad": the invariant's checker finds a violation, and its rendered
//     report equals "<case>-bad.golden" (rewrite with -update).
//   - "-unknown": the invariant's checker says unknown, and no checker finds
//     a violation; the reason is compared with "<case>-unknown.golden".
func TestGolden_Histories(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]map[string]int{}
	// A client run's goldens (named client-*) are counted apart: the
	// client suite needs its own of each invariant, exactly-once included.
	clientCounts := map[string]map[string]int{}
	for _, file := range files {
		invariant := filepath.Base(filepath.Dir(file))
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		verdict := name[strings.LastIndexByte(name, '-')+1:]
		if counts[invariant] == nil {
			counts[invariant] = map[string]int{}
		}
		counts[invariant][verdict]++
		if strings.HasPrefix(name, "client-") && verdict != "unknown" {
			if clientCounts[invariant] == nil {
				clientCounts[invariant] = map[string]int{}
			}
			clientCounts[invariant][verdict]++
		}
		t.Run(invariant+"/"+name, func(t *testing.T) {
			t.Parallel()
			// Every header is kept; the contract says which are compared.
			h := loadGolden(t, file, nil)
			// The contract the history's meta carries, then the sidecar's.
			contract, err := checkers.ContractFromMeta(h.Meta.Contract)
			if err != nil {
				t.Fatalf("meta contract: %v", err)
			}
			opts, _ := readOpts(t, strings.TrimSuffix(file, ".jsonl")+".opts")
			opts = append([]checkers.Option{checkers.WithContract(contract)}, opts...)
			c, err := checkers.ByName(invariant, opts...)
			if err != nil {
				t.Fatalf("directory %s: %v", invariant, err)
			}
			r := c.Check(h, h.Effects)
			// The others are the history's own suite: a client run's
			// history is judged by the client invariants.
			others := suiteOf(t, h, opts).Check(h, h.Effects)
			switch verdict {
			case "ok":
				if r.Verdict != checkers.Pass {
					t.Fatalf("%s: got %s, want pass:\n%s", invariant, r.Verdict, strings.Join(r.Failures(), "\n"))
				}
				assertNoViolation(t, others)
			case "bad":
				if r.Verdict != checkers.Violated {
					t.Fatalf("%s: got %s, want a violation (%s)", invariant, r.Verdict, r.Reason)
				}
				compareGolden(t, strings.TrimSuffix(file, ".jsonl")+".golden", render(r))
			case "unknown":
				if r.Verdict != checkers.Unknown {
					t.Fatalf("%s: got %s, want unknown:\n%s", invariant, r.Verdict, strings.Join(r.Failures(), "\n"))
				}
				assertNoViolation(t, others)
				compareGolden(t, strings.TrimSuffix(file, ".jsonl")+".golden", render(r))
			default:
				t.Fatalf("the name must end in -ok, -bad or -unknown, not -%s", verdict)
			}
		})
	}
	t.Run("coverage", func(t *testing.T) {
		t.Parallel()
		for _, inv := range checkers.Names() {
			if counts[inv]["ok"] < 3 || counts[inv]["bad"] < 3 {
				t.Errorf("%s: %d ok and %d bad golden histories, want at least 3 of each", inv, counts[inv]["ok"], counts[inv]["bad"])
			}
		}
		for _, inv := range checkers.SuiteNames(checkers.SuiteClient) {
			if clientCounts[inv]["ok"] < 2 || clientCounts[inv]["bad"] < 2 {
				t.Errorf("%s: %d ok and %d bad golden client histories, want at least 2 of each", inv, clientCounts[inv]["ok"], clientCounts[inv]["bad"])
			}
		}
	})
}

// suiteOf is the history's own default suite with the options: the server
// invariants, or the client ones for a client run's history.
func suiteOf(t testing.TB, h *history.History, opts []checkers.Option) checkers.Checker {
	t.Helper()
	var suite []checkers.Checker
	// The invariants the meta names besides the mode's default set: those
	// in no suite (forward-only, no-lost-message) run only when named.
	names := checkers.DefaultNames(h.Meta.Mode)
	for _, n := range h.Meta.Invariants {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		c, err := checkers.ByName(n, opts...)
		if err != nil {
			t.Fatal(err)
		}
		suite = append(suite, c)
	}
	return checkers.All(suite...)
}

func assertNoViolation(t testing.TB, r checkers.Result) {
	t.Helper()
	for _, p := range r.Results {
		if p.Verdict == checkers.Violated {
			t.Errorf("another invariant is violated by a case that must hold:\n%s", strings.Join(p.Failures(), "\n"))
		}
	}
}

func loadGolden(t testing.TB, file string, keep []string) *history.History {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.Load(f, history.LoadOptions{KeepHeaders: keep, KeepHeader: func(string) bool { return true }})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return h
}

// readOpts reads the optional sidecar: one "name=value" per line, "#" comments.
// It returns the checker options and the headers the load must keep.
func readOpts(t testing.TB, file string) ([]checkers.Option, []string) {
	t.Helper()
	keep := slices.Clone(history.DefaultKeepHeaders)
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil, keep
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var opts []checkers.Option
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		var d time.Duration
		if name == "decision-bound" || name == "retention-gap" {
			if d, err = time.ParseDuration(value); err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
		}
		switch {
		case !ok:
			t.Fatalf("%s:%d: want name=value, got %q", file, n, line)
		case name == "profile":
			p, err := checkers.ProfileByName(value)
			if err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
			opts = append(opts, checkers.WithProfile(p))
		case name == "headers":
			hs := strings.Split(value, ",")
			for i := range hs {
				hs[i] = strings.TrimSpace(hs[i])
			}
			opts = append(opts, checkers.WithHeaders(hs...))
			keep = append(keep, hs...)
		case name == "decision-bound":
			opts = append(opts, checkers.WithDecisionBound(d))
		case name == "retention-gap":
			opts = append(opts, checkers.WithRetentionGap(d))
		case name == "fingerprint":
			opts = append(opts, checkers.WithFingerprint(value))
		case name == "states":
			opts = append(opts, checkers.WithStates(strings.Split(value, ",")...))
		default:
			t.Fatalf("%s:%d: unknown option %q (known: profile, headers, decision-bound, retention-gap, fingerprint, states; or a \"contract\" in the meta event)", file, n, name)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return opts, keep
}

// render is the stable text of a result that the .golden files hold: the
// verdict, then per violation its numbered failure line and the structured
// fields every violation must carry (key, tenant, intent, ops).
func render(r checkers.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict)
	fails := r.Failures()
	if r.Verdict == checkers.Unknown {
		fmt.Fprintf(&b, "%s\n", fails[0])
		return b.String()
	}
	for i, v := range r.Violations {
		fmt.Fprintf(&b, "%s\n", fails[i])
		fmt.Fprintf(&b, "  tenant=%q endpoint=%q key=%q intent=%q ops=%v\n", v.Tenant, strings.TrimSpace(v.Method+" "+v.Path), v.Key, v.Intent, v.Ops)
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Reason)
	}
	return b.String()
}

func compareGolden(t testing.TB, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./checkers/ -run TestGolden -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("report differs from %s (run with -update if the change is intended)\n--- got\n%s--- want\n%s", file, got, want)
	}
}
