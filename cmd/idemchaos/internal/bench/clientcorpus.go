package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/idemchaos/idemchaos/examples/clients"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ClientCorpusRow is one client of the corpus (examples/clients) over the
// seeds: the client probes (examples/clients/scenarios/probes.yaml) run
// through idemchaos, each run's caught client invariants set against the
// client's measured ground truth.
type ClientCorpusRow struct {
	Name, Lang string
	// Breaks is its ground truth: the invariants it breaks.
	Breaks []string
	Runs   int
	// FalseAlarms and Misses count, over every run and invariant, one
	// caught that its truth says kept and one kept that it says broken,
	// by invariant; Errors counts runs that did not finish.
	FalseAlarms, Misses map[string]int
	Errors              int
	// Example is one history path of a wrong run ("" when none).
	Example string
}

// clientCorpus runs every client of the corpus × seeds, three runs at a
// time (a run is a dozen steps of real processes).
func clientCorpus(ctx context.Context, b *bench, root string, r *harness.Runner, seeds int) ([]ClientCorpusRow, error) {
	bin, err := os.MkdirTemp("", "idemchaos-client-corpus-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(bin)
	if err := clients.Build(ctx, root, bin); err != nil {
		return nil, err
	}
	cases := clients.Cases()
	rows := make([]ClientCorpusRow, len(cases))
	slots := make(chan struct{}, 3)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		done int
	)
	for i, c := range cases {
		rows[i] = ClientCorpusRow{Name: c.Name, Lang: c.Lang, FalseAlarms: map[string]int{}, Misses: map[string]int{}}
		for _, inv := range clients.Invariants {
			if c.Breaks[inv] != "" {
				rows[i].Breaks = append(rows[i].Breaks, inv)
			}
		}
		for seed := int64(1); seed <= int64(seeds); seed++ {
			slots <- struct{}{}
			if ctx.Err() != nil {
				break
			}
			wg.Go(func() {
				defer func() { <-slots }()
				o, err := runClient(ctx, root, bin, r, c, seed)
				mu.Lock()
				defer mu.Unlock()
				row := &rows[i]
				row.Runs++
				done++
				if err != nil {
					row.Errors++
					b.logf("clients corpus: %s seed %d: %v", c.Name, seed, err)
					return
				}
				falseAlarms, misses := c.Wrong(o.Caught())
				for _, inv := range falseAlarms {
					row.FalseAlarms[inv]++
				}
				for _, inv := range misses {
					row.Misses[inv]++
				}
				if len(falseAlarms)+len(misses) > 0 && row.Example == "" {
					row.Example = o.HistoryPath
				}
				if done%20 == 0 {
					b.logf("clients corpus: %d of %d runs", done, len(cases)*seeds)
				}
			})
		}
	}
	wg.Wait()
	return rows, ctx.Err()
}

// runClient runs the probes with client c at seed.
func runClient(ctx context.Context, root, bin string, r *harness.Runner, c clients.Client, seed int64) (*harness.Outcome, error) {
	s, err := scenarios.Load(root + "/examples/clients/scenarios/probes.yaml")
	if err != nil {
		return nil, err
	}
	s.Client.Command = c.Command(root, bin)
	return r.Run(ctx, s, harness.RunOptions{Seed: seed})
}

// clientCorpusMD prints the corpus table.
func clientCorpusMD(p printer, rows []ClientCorpusRow, seeds int) {
	if len(rows) == 0 {
		return
	}
	total, alarms, misses, errs := 0, 0, 0, 0
	for _, r := range rows {
		total += r.Runs
		errs += r.Errors
		for _, n := range r.FalseAlarms {
			alarms += n
		}
		for _, n := range r.Misses {
			misses += n
		}
	}
	p("The client corpus (`examples/clients`, each client's ground truth measured without idemchaos by its `TestTruth`) through "+
		"idemchaos: the client probes (`examples/clients/scenarios/probes.yaml`, every client-path fault a step) × %d seeds a client, "+
		"on the embedded environment. A false alarm is an invariant caught that the client's truth says it keeps, a miss one it says "+
		"broken and not caught, each counted per run and invariant.", seeds)
	p("")
	p("| client | on | breaks (its truth) | runs | false alarms | misses | runs not finished | |")
	p("|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		breaks := "none"
		if len(r.Breaks) > 0 {
			breaks = strings.Join(r.Breaks, ", ")
		}
		p("| %s | %s | %s | %d | %s | %s | %d | %s |", r.Name, r.Lang, breaks, r.Runs, byInvariant(r.FalseAlarms), byInvariant(r.Misses), r.Errors,
			metIf(sum(r.FalseAlarms)+sum(r.Misses)+r.Errors == 0, "history "+r.Example))
	}
	p("| **all** | | | %d | %d | %d | %d | %s |", total, alarms, misses, errs, metIf(alarms+misses+errs == 0, "wrong verdicts"))
	p("")
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// byInvariant is "0", or each invariant with its count.
func byInvariant(m map[string]int) string {
	var parts []string
	for _, inv := range clients.Invariants {
		if m[inv] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", inv, m[inv]))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}
