package harness_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

var updatePlans = flag.Bool("update-plans", false, "rewrite testdata/plans/*.golden from today's plans")

// goldenSeeds are the seeds whose plans are pinned.
var goldenSeeds = []int64{1, 42}

// bundledPlans returns, per bundled scenario and golden seed, the plans of
// every step as indented JSON — what `run --plan` reads.
func bundledPlans(tb testing.TB) map[string][]byte {
	tb.Helper()
	suite, err := scenarios.Bundled()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string][]byte{}
	for _, s := range suite {
		for _, seed := range goldenSeeds {
			plans, err := harness.Plans(s, seed)
			if err != nil {
				tb.Fatalf("%s: %v", s.Name, err)
			}
			b, err := json.MarshalIndent(plans, "", " ")
			if err != nil {
				tb.Fatal(err)
			}
			out[fmt.Sprintf("%s-seed%d.golden", s.Name, seed)] = append(b, '\n')
		}
	}
	return out
}

// TestPlans_Golden pins the plan of every bundled scenario for two seeds:
// a seed printed in a report must replay the same plan after an upgrade
// (of pgregory.net/rapid, whose draws make the plans, or of our code). A
// change here is a change of every published seed: accept it knowingly
// with -update-plans.
func TestPlans_Golden(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "plans")
	got := bundledPlans(t)
	if *updatePlans {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.golden"))
	if len(files) != len(got) {
		t.Errorf("%d golden plans in %s, want %d (one per bundled scenario and seed; -update-plans writes them)", len(files), dir, len(got))
	}
	for name, b := range got {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s: today's plan differs from the golden one: the same seed no longer replays the same plan (-update-plans accepts it)", name)
		}
	}
}

// planOutEnv makes TestPlans_PrintForAnotherProcess write the plans.
const planOutEnv = "IDEMCHAOS_TEST_PLANS_OUT"

// TestPlans_PrintForAnotherProcess is the child of
// TestPlans_SameAcrossProcesses: it writes every plan to a file.
func TestPlans_PrintForAnotherProcess(t *testing.T) {
	out := os.Getenv(planOutEnv)
	if out == "" {
		t.Skip("helper of TestPlans_SameAcrossProcesses")
	}
	b, err := json.Marshal(bundledPlans(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlans_SameAcrossProcesses: two fresh processes (each with its own
// map iteration order, hash seed and scheduling) make byte-identical plans,
// identical to this process's.
func TestPlans_SameAcrossProcesses(t *testing.T) {
	t.Parallel()
	mine, err := json.Marshal(bundledPlans(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		out := filepath.Join(t.TempDir(), "plans.json")
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPlans_PrintForAnotherProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), planOutEnv+"="+out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("process %d: %v\n%s", i+1, err, b)
		}
		theirs, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("process %d wrote nothing: %v", i+1, err)
		}
		if !bytes.Equal(theirs, mine) {
			t.Errorf("process %d made other plans than this one (%d bytes, this one %d)", i+1, len(theirs), len(mine))
		}
	}
}
