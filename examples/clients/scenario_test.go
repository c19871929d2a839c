package clients_test

// TestScenario runs every client of the corpus through idemchaos itself —
// the bundled client probes (scenarios/probes.yaml) against the reference
// behind the per-intent fault proxy, judged by the client invariants — at
// several seeds: each client must be caught by exactly the invariants its
// ground truth (Breaks) lists, and clean on the others.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/examples/clients"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// corpusSeeds is how many seeds each client runs at: 1 by default, so the
// go test every CI run makes holds every client to its truth (12 runs, about
// 90 s of a loaded 2-core machine, beside the package's other tests);
// CORPUS_SEEDS raises it (3 or more for the corpus's claim; the bench
// section runs 20).
func corpusSeeds(t *testing.T) int {
	v := os.Getenv("CORPUS_SEEDS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("CORPUS_SEEDS=%q: want a positive number", v)
	}
	return n
}

func TestScenario(t *testing.T) {
	seeds := corpusSeeds(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	ctx := context.Background()
	if err := clients.Build(ctx, root, bin); err != nil {
		t.Fatal(err)
	}
	r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{})
	if err != nil {
		t.Fatalf("local environment: %v", err)
	}
	t.Cleanup(func() { _ = closeEnv(context.Background()) })
	// Histories are kept when the test fails, to read what a client did.
	if r.HistoryDir, err = os.MkdirTemp("", "corpus-histories-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(r.HistoryDir)
		}
	})
	// Three clients at a time: a run is a dozen steps of real processes.
	slots := make(chan struct{}, 3)
	var mu sync.Mutex
	var elapsed time.Duration
	runs := 0
	for _, c := range clients.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= int64(seeds); seed++ {
				s, err := scenarios.Load("scenarios/probes.yaml")
				if err != nil {
					t.Fatal(err)
				}
				s.Client.Command = c.Command(root, bin)
				slots <- struct{}{}
				o, err := r.Run(ctx, s, harness.RunOptions{Seed: seed})
				<-slots
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				mu.Lock()
				elapsed += o.Elapsed
				runs++
				mu.Unlock()
				falseAlarms, misses := c.Wrong(o.Caught())
				for _, inv := range falseAlarms {
					t.Errorf("seed %d: %s caught, but its truth says kept (history %s)", seed, inv, o.HistoryPath)
				}
				for _, inv := range misses {
					t.Errorf("seed %d: %s not caught, but its truth says broken: %s (history %s)", seed, inv, c.Breaks[inv], o.HistoryPath)
				}
				if t.Failed() {
					return
				}
			}
		})
	}
	t.Cleanup(func() {
		if runs > 0 {
			t.Logf("%d client runs, %s per run on average", runs, (elapsed / time.Duration(runs)).Round(time.Millisecond))
		}
	})
}
