package bench

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/examples/foreign"
	"github.com/idemchaos/idemchaos/internal/mariadb"
	"github.com/idemchaos/idemchaos/internal/pgcluster"
)

// ForeignResult is the foreign section: every service of the foreign
// corpus (examples/foreign, written independently of the reference) as its
// own process, flawed ones × [Options.ForeignSeeds] seeds, correct ones ×
// [Options.ForeignCleanSeeds].
type ForeignResult struct {
	Cases []ForeignCase
	// FalseAlarms counts runs of correct services with a violation;
	// Inconclusive runs of any service with an unknown verdict or an
	// error; Misses runs of flawed services not caught by the expected
	// invariant with its cause.
	FalseAlarms, Inconclusive, Misses int
}

// ForeignCase is one service of the corpus over its seeds.
type ForeignCase struct {
	Name, Class, Expect string
	// Setup is the setup problem the verdict must name ("" for none).
	Setup        string `json:",omitempty"`
	Seeds, Right int
	// Verdicts counts the runs by verdict.
	Verdicts map[foreign.Verdict]int
	// Bad lists the runs that were not right (at most 5).
	Bad []foreign.SeedResult
	// Err is why the case could not run at all.
	Err string
	// KnownMiss is the corpus's reason when the case is a known gap.
	KnownMiss string
	Time      Summary
}

func (b *bench) foreign(ctx context.Context) error {
	root, err := foreign.ModuleRoot(ctx)
	if err != nil {
		return fmt.Errorf("the foreign section builds examples/foreign/cmd/foreignsvc from a checkout: %w", err)
	}
	tmp, err := os.MkdirTemp("", "idemchaos-foreign-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := foreign.Build(ctx, tmp)
	if err != nil {
		return err
	}
	e := foreign.Env{Bin: bin, Root: root, HistoryDir: b.opts.HistoryDir}
	var cluster *pgcluster.Cluster
	var maria *mariadb.Server
	defer func() {
		if cluster != nil {
			_ = cluster.Close(context.WithoutCancel(ctx))
		}
		if maria != nil {
			_ = maria.Close(context.WithoutCancel(ctx))
		}
	}()
	var dbSeq atomic.Int64
	e.Database = func(ctx context.Context, kind foreign.DatabaseKind, name string) (foreign.DB, func(), error) {
		db := fmt.Sprintf("foreign_%d_%s", dbSeq.Add(1), nonIdent.ReplaceAllString(name, "_"))
		switch kind {
		case foreign.Postgres:
			if cluster == nil {
				c, err := pgcluster.Start(ctx, pgcluster.Config{})
				if err != nil {
					return foreign.DB{}, nil, err
				}
				cluster = c
			}
			dsn, err := cluster.CreateDatabase(ctx, db)
			if err != nil {
				return foreign.DB{}, nil, err
			}
			return foreign.DB{Service: dsn, Oracle: dsn}, func() { _ = cluster.DropDatabase(context.WithoutCancel(ctx), db) }, nil
		case foreign.MariaDB:
			if maria == nil {
				s, err := mariadb.Start(ctx, mariadb.Config{})
				if err != nil {
					return foreign.DB{}, nil, err
				}
				maria = s
			}
			url, err := maria.CreateDatabase(ctx, db)
			if err != nil {
				return foreign.DB{}, nil, err
			}
			return foreign.DB{Service: maria.DriverDSN(db), Oracle: url}, func() { _ = maria.DropDatabase(context.WithoutCancel(ctx), db) }, nil
		}
		return foreign.DB{}, nil, fmt.Errorf("no %s database in the bench", kind)
	}
	for _, name := range b.opts.ForeignCases {
		if !slices.ContainsFunc(foreign.Cases(), func(c foreign.Case) bool { return c.Name == name }) {
			return fmt.Errorf("bench: no foreign case %q", name)
		}
	}
	res := &ForeignResult{}
	b.rep.Foreign = res
	for _, c := range foreign.Cases() {
		if len(b.opts.ForeignCases) > 0 && !slices.Contains(b.opts.ForeignCases, c.Name) {
			continue
		}
		n := b.opts.ForeignSeeds
		if c.Correct() {
			n = b.opts.ForeignCleanSeeds
		}
		seeds := make([]int64, n)
		for i := range seeds {
			seeds[i] = int64(i + 1)
		}
		if len(b.opts.ForeignSeedList) > 0 {
			seeds, n = b.opts.ForeignSeedList, len(b.opts.ForeignSeedList)
		}
		fc := ForeignCase{Name: c.Name, Class: c.Class, Expect: c.Expect, Setup: c.Setup, Verdicts: map[foreign.Verdict]int{}, KnownMiss: foreign.KnownMiss[c.Name]}
		var times []time.Duration
		_, err := e.Run(ctx, c, seeds, func(r foreign.SeedResult) {
			fc.Seeds++
			fc.Verdicts[r.Verdict]++
			times = append(times, r.Elapsed)
			switch {
			case c.Right(r.Verdict):
				fc.Right++
			case r.Verdict == foreign.Inconclusive || r.Verdict == foreign.Error:
				res.Inconclusive++
			case c.Correct() || r.Verdict == foreign.FalseAlarm:
				res.FalseAlarms++
			default:
				res.Misses++
			}
			if !c.Right(r.Verdict) && len(fc.Bad) < 5 {
				fc.Bad = append(fc.Bad, r)
			}
			b.logf("foreign %s seed %d: %s %v (%d requests, %s)", c.Name, r.Seed, r.Verdict, r.Violated, r.Requests, r.Elapsed.Round(time.Millisecond))
		})
		fc.Time = Summarize(seconds(times))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fc.Err = err.Error()
			res.Inconclusive += n - fc.Seeds
			b.logf("foreign %s: %v", c.Name, oneLine(err.Error()))
		}
		res.Cases = append(res.Cases, fc)
	}
	return nil
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// failures lists what did not hold in the foreign section.
func (f *ForeignResult) failures() []string {
	var bad []string
	for _, c := range f.Cases {
		if c.Err != "" {
			bad = append(bad, fmt.Sprintf("foreign %s: %s", c.Name, oneLine(c.Err)))
		}
		for _, r := range c.Bad {
			bad = append(bad, fmt.Sprintf("foreign %s seed %d: %s %v (history %s)", c.Name, r.Seed, r.Verdict, r.Violated, r.History))
		}
	}
	return bad
}

func (r *Report) foreignMD(p printer) {
	f := r.Foreign
	if f == nil {
		return
	}
	p("## Foreign services")
	p("")
	p("The corpus of `examples/foreign`: order services written the way other teams write them, independently of the reference " +
		"and of the checkers (tenant in the body, a header or the path; 200 or 201; 409 or wait-and-replay in flight; 422, 400 or 417 " +
		"on reuse; in memory or on Postgres), each started as its own process and run through its team's scenario. " +
		"A correct service must be clean at every seed; a flawed one (one per class of issue 11) caught at every seed by the expected " +
		"invariant, with a cause that names the flaw; one whose problem is its setup (a listen backlog too small for the traffic) " +
		"judged nothing to judge, the setup named, never accused. Targets: 0 false alarms, 0 misses, 0 inconclusive.")
	p("")
	p("| service | class | expected | right | seeds | verdicts | time per run median (min–max) | known gap |")
	p("|---|---|---|---|---|---|---|---|")
	for _, c := range f.Cases {
		exp := c.Expect
		switch {
		case c.Setup != "":
			exp = "setup named: " + c.Setup
		case exp == "":
			exp = "clean"
		}
		right := fmt.Sprintf("%d/%d", c.Right, c.Seeds)
		if c.Right < c.Seeds || c.Err != "" {
			right = "**" + right + "**"
		}
		var vs []string
		for v, n := range c.Verdicts {
			vs = append(vs, fmt.Sprintf("%s %d", v, n))
		}
		if c.Err != "" {
			vs = append(vs, "error: "+oneLine(c.Err))
		}
		p("| %s | %s | %s | %s | %d | %s | %.2f s (%.2f–%.2f) | %s |", c.Name, orDash(c.Class), exp, right, c.Seeds,
			strings.Join(slices.Sorted(slices.Values(vs)), ", "), c.Time.Median, c.Time.Min, c.Time.Max, orDash(c.KnownMiss))
	}
	p("")
	listed := false
	for _, c := range f.Cases {
		for _, r := range c.Bad {
			if !listed {
				p("Runs that were not right (at most 5 per service):")
				p("")
				listed = true
			}
			p("- %s seed %d: **%s** %v — %s (history `%s`)", c.Name, r.Seed, r.Verdict, r.Violated, clip(oneLine(r.Detail), 400), r.History)
		}
	}
	if listed {
		p("")
	}
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ParseSeeds reads a list of seeds ("52,61", "30-35,82"; N alone is 1..N)
// as the foreign corpus's test reads CORPUS_SEEDS: the command's way to
// the corpus, which ARCHITECTURE.md keeps out of cmd/idemchaos itself.
func ParseSeeds(s string) ([]int64, error) { return foreign.ParseSeeds(s) }
