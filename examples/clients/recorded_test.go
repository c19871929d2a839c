package clients_test

// TestRecorded judges, offline, one real history per client of the corpus:
// each recorded by idemchaos running the client through the bundled
// probes (scenarios/probes.yaml, seed 1, on a loaded machine), kept in
// testdata/recorded. Every client must be caught by exactly the invariants
// its ground truth (Breaks) lists. It pins the client invariants' verdicts
// on real traffic — backoff's lockstep threshold was set on such data —
// without running a process; TestScenario is the live proof.

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/examples/clients"
	"github.com/idemchaos/idemchaos/history"
)

func TestRecorded(t *testing.T) {
	t.Parallel()
	for _, c := range clients.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(filepath.Join("testdata", "recorded", c.Name+".jsonl.gz"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			z, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			h, err := history.Load(z, history.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !h.Client() {
				t.Fatal("not a client run's history")
			}
			contract, err := checkers.ContractFromMeta(h.Meta.Contract)
			if err != nil {
				t.Fatal(err)
			}
			names := h.Meta.Invariants
			if len(names) == 0 {
				names = checkers.DefaultNames(h.Meta.Mode)
			}
			suite, err := checkers.ForContract(contract, names...)
			if err != nil {
				t.Fatal(err)
			}
			j := checkers.Judge(h, suite, contract.Options()...)
			var caught []string
			for _, s := range j.Steps {
				for _, p := range s.Result.Results {
					if p.Verdict == checkers.Violated && !slices.Contains(caught, p.Name) {
						caught = append(caught, p.Name)
					}
				}
			}
			t.Logf("caught: %v", caught)
			for _, inv := range clients.Invariants {
				broke, truth := slices.Contains(caught, inv), c.Breaks[inv] != ""
				switch {
				case broke && !truth:
					t.Errorf("%s caught, but its truth says kept", inv)
				case !broke && truth:
					t.Errorf("%s not caught, but its truth says broken: %s", inv, c.Breaks[inv])
				}
			}
		})
	}
}
