package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/internal/ctxwait"
)

// Section names, in the order [Run] runs them.
const (
	SectionDetection   = "detection"
	SectionFalseAlarms = "false-alarms"
	SectionForeign     = "foreign"
	SectionDriver      = "driver"
	SectionChecker     = "checker"
	SectionReference   = "reference"
	SectionStartup     = "startup"
	SectionConsumers   = "consumers"
	SectionClients     = "clients"
	SectionDemo        = "demo"
)

// SectionTargets is not a section of its own: --only targets runs the
// sections the Targets table is made of ([TargetSections]) and rewrites
// that table alone in an existing BENCHMARKS.md.
const SectionTargets = "targets"

// TargetSections are the sections whose figures make the Targets table.
func TargetSections() []string {
	return []string{SectionDetection, SectionFalseAlarms, SectionForeign, SectionDriver, SectionChecker, SectionDemo}
}

// Sections lists every section, in the order [Run] runs them.
func Sections() []string {
	return []string{SectionDetection, SectionFalseAlarms, SectionForeign, SectionDriver, SectionChecker, SectionReference, SectionStartup,
		SectionConsumers, SectionClients, SectionDemo}
}

// Options say what to measure and how long for. The zero value is the full
// bench.
type Options struct {
	// Only limits the run to these sections (default: all of [Sections]);
	// [SectionTargets] stands for the sections of the Targets table.
	Only []string
	// Rewrite, once resolved, is what [Report.Splice] rewrites of an
	// existing report: the blocks named in Only (nil: every block).
	Rewrite []string
	// Seeds is the number of seeds every mutant meets in the detection
	// section (default 20; [Quick]: 3).
	Seeds int
	// StormSeeds is the number of seeds of storm the correct reference
	// meets in the false-alarm section (default 100; [Quick]: 10).
	StormSeeds int
	// ForeignSeeds is the number of seeds every flawed service of the
	// foreign corpus meets, and ForeignCleanSeeds every correct one
	// (defaults 20 and 100; [Quick]: 3 and 10).
	ForeignSeeds, ForeignCleanSeeds int
	// ClientSeeds is the number of seeds every client of the client
	// corpus (examples/clients) meets in the clients section (default 20;
	// [Quick]: 3).
	ClientSeeds int
	// ForeignSeedList, when set, is the seeds every foreign case meets
	// instead (flawed and correct alike): a miss seen at seed 52 of a
	// long run is rerun at seed 52 alone.
	ForeignSeedList []int64
	// ForeignCases limits the foreign section to these cases, by name
	// (default: every case of the corpus).
	ForeignCases []string
	// Repeats is the number of samples behind each timing of the driver,
	// checker and reference sections (default 5).
	Repeats int
	// StartupRepeats is the number of start-ups of each environment (default 10).
	StartupRepeats int
	// ConsumerMessages is the number of messages behind each rate sample
	// of the consumers section (default 5000; [Quick]: 1000).
	ConsumerMessages int
	// DemoRuns is the number of whole demos timed (default 3).
	DemoRuns int
	// Slice is the length of one throughput sample (default 2s).
	Slice time.Duration
	// Concurrency is the client concurrency of the throughput sections
	// (default 16, as the reference's own benchmark).
	Concurrency int
	// CheckerSizes are the history sizes, in events (default 10k, 100k, 1M).
	CheckerSizes []int
	// HistoryDir keeps the histories of the detection and false-alarm runs
	// ("" = a new directory under the system temp dir, kept afterwards so
	// that a report's history paths can be opened).
	HistoryDir string
	// Wrk and Pgbench are the baseline binaries ("" = from PATH).
	Wrk, Pgbench string
	// Loaded runs the gate with the machine deliberately loaded
	// ([LoadBurners] CPU-bound processes alongside); with it, StormSeeds
	// defaults to 100 even in [Quick].
	Loaded bool
	// Progress receives one line per step (default: nothing).
	Progress io.Writer
	_        struct{}
}

// resolve fills in defaults and checks the section names.
func (o Options) resolve(quick bool) (Options, error) {
	o.Rewrite = nil
	for _, s := range o.Only {
		if s != SectionTargets && !slices.Contains(Sections(), s) {
			return o, fmt.Errorf("%w %q (known: %s, %s)", ErrUnknownSection, s, strings.Join(Sections(), ", "), SectionTargets)
		}
	}
	if len(o.Only) > 0 {
		// What the run rewrites is what was named; what it runs, the named
		// sections and those the Targets table needs.
		o.Rewrite = slices.Clone(o.Only)
		var run []string
		for _, s := range Sections() {
			if slices.Contains(o.Only, s) || (slices.Contains(o.Only, SectionTargets) && slices.Contains(TargetSections(), s)) {
				run = append(run, s)
			}
		}
		o.Only = run
	}
	if len(o.Only) == 0 {
		o.Only = Sections()
		if quick {
			o.Only = []string{SectionDetection, SectionFalseAlarms}
		}
	}
	def := func(v *int, full, short int) {
		if *v <= 0 {
			*v = full
			if quick {
				*v = short
			}
		}
	}
	if o.Loaded && o.StormSeeds <= 0 {
		o.StormSeeds = 100
	}
	def(&o.Seeds, 20, 3)
	def(&o.StormSeeds, 100, 10)
	def(&o.ForeignSeeds, 20, 3)
	def(&o.ClientSeeds, 20, 3)
	def(&o.ForeignCleanSeeds, 100, 10)
	def(&o.Repeats, 5, 3)
	def(&o.StartupRepeats, 10, 3)
	def(&o.ConsumerMessages, 5000, 1000)
	def(&o.DemoRuns, 3, 1)
	def(&o.Concurrency, 16, 16)
	if o.Slice <= 0 {
		o.Slice = 2 * time.Second
	}
	if len(o.CheckerSizes) == 0 {
		o.CheckerSizes = []int{10_000, 100_000, 1_000_000}
	}
	runs := slices.ContainsFunc(o.Only, func(s string) bool {
		return s == SectionDetection || s == SectionFalseAlarms || s == SectionForeign || s == SectionDemo || s == SectionClients
	})
	if o.HistoryDir == "" && runs {
		dir, err := os.MkdirTemp("", "idemchaos-bench-")
		if err != nil {
			return o, fmt.Errorf("bench: history dir: %w", err)
		}
		o.HistoryDir = dir
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o, nil
}

// SectionRun is how one section went: when, how long, the machine's load
// around it, and the error that ended it early ("" when it finished).
type SectionRun struct {
	Name        string
	Started     time.Time
	Elapsed     time.Duration
	Load1Before float64
	Load1After  float64
	Err         string
}

// Report is everything a bench run measured. A section that was not run
// is nil.
type Report struct {
	Machine Machine
	Quick   bool
	// Options are the options in force, defaults filled in.
	Options  Options
	Started  time.Time
	Elapsed  time.Duration
	Sections []SectionRun

	Detection   *DetectionResult
	FalseAlarms *FalseAlarmResult
	Foreign     *ForeignResult
	Driver      *DriverResult
	Checker     *CheckerResult
	Reference   *ReferenceResult
	Startup     *StartupResult
	Consumers   *ConsumersResult
	Clients     *ClientsResult
	Demo        *DemoResult
	// Load is the load a --loaded run put on the machine (nil otherwise).
	Load *Load
}

// bench is one run in progress.
type bench struct {
	opts Options
	rep  *Report
	mu   sync.Mutex
}

// logf prints one progress line.
func (b *bench) logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.opts.Progress, "bench: "+format+"\n", args...)
}

// Run runs the sections opts asks for, in the order of [Sections], and
// returns what they measured. A section that fails or runs out of its time
// bound is recorded in [Report.Sections] and the others still run; Run
// itself fails only for bad options or when ctx ends.
func Run(ctx context.Context, opts Options) (*Report, error) {
	return run(ctx, opts, false)
}

// Quick is the gate CI runs (`idemchaos bench --quick`, and this package's
// test): every mutant × 3 seeds of the bundled suite (the first seed also
// runs the whole suite over the correct reference, as demo does) and the
// correct reference × 10 seeds of storm, unless opts says otherwise. It
// returns the report and, wrapping [ErrGate], what did not hold.
func Quick(ctx context.Context, opts Options) (*Report, error) {
	rep, err := run(ctx, opts, true)
	if err != nil {
		return rep, err
	}
	return rep, rep.Gate()
}

func run(ctx context.Context, opts Options, quick bool) (*Report, error) {
	opts, err := opts.resolve(quick)
	if err != nil {
		return nil, err
	}
	b := &bench{opts: opts, rep: &Report{Quick: quick, Options: opts, Started: time.Now()}}
	b.rep.Machine = machineInfo(ctx, opts)
	b.logf("%s on %d cores, %s", strings.Join(opts.Only, ", "), b.rep.Machine.Cores, b.rep.Machine.Go)
	if opts.HistoryDir != "" {
		b.logf("histories go to %s", opts.HistoryDir)
	}
	if opts.Loaded {
		how, stop, err := startLoad()
		if err != nil {
			return nil, err
		}
		defer stop()
		b.rep.Load = &Load{How: how}
		b.logf("loading the machine: %s", how)
		if !ctxwait.Sleep(ctx, loadSettle) {
			return b.rep, ctx.Err()
		}
		b.rep.Load.Load1Start = load1()
		defer func() { b.rep.Load.Load1End = load1() }()
	}
	for _, name := range Sections() {
		if !slices.Contains(opts.Only, name) {
			continue
		}
		sr := SectionRun{Name: name, Started: time.Now(), Load1Before: load1()}
		b.logf("%s: start (load %.2f)", name, sr.Load1Before)
		sctx, cancel := context.WithTimeout(ctx, b.bound(name))
		err := b.section(name)(sctx)
		cancel()
		sr.Elapsed, sr.Load1After = time.Since(sr.Started), load1()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				err = fmt.Errorf("%w: the section ran out of its %s bound", err, b.bound(name))
			}
			sr.Err = err.Error()
			b.logf("%s: FAILED after %s: %v", name, sr.Elapsed.Round(time.Millisecond), err)
		} else {
			b.logf("%s: done in %s (load %.2f)", name, sr.Elapsed.Round(time.Millisecond), sr.Load1After)
		}
		b.rep.Sections = append(b.rep.Sections, sr)
		if ctx.Err() != nil {
			b.rep.Elapsed = time.Since(b.rep.Started)
			return b.rep, ctx.Err()
		}
	}
	b.rep.Elapsed = time.Since(b.rep.Started)
	b.rep.Machine.Load1End = load1()
	return b.rep, nil
}

func (b *bench) section(name string) func(context.Context) error {
	switch name {
	case SectionDetection:
		return b.detection
	case SectionFalseAlarms:
		return b.falseAlarms
	case SectionForeign:
		return b.foreign
	case SectionDriver:
		return b.driver
	case SectionChecker:
		return b.checker
	case SectionReference:
		return b.reference
	case SectionStartup:
		return b.startup
	case SectionConsumers:
		return b.consumers
	case SectionClients:
		return b.clients
	}
	return b.demo
}

// bound is the time a section may take: generous (several times what it
// takes on a 2-core machine), so that only a hang trips it.
func (b *bench) bound(name string) time.Duration {
	o := b.opts
	switch name {
	case SectionDetection:
		return 2*time.Minute + time.Duration(o.Seeds)*3*time.Minute
	case SectionFalseAlarms:
		return 2*time.Minute + time.Duration(o.StormSeeds)*time.Minute
	case SectionForeign:
		return 2*time.Minute + time.Duration(o.ForeignSeeds)*2*time.Minute + time.Duration(o.ForeignCleanSeeds)*30*time.Second
	case SectionDriver:
		return 2*time.Minute + time.Duration(o.Repeats)*8*o.Slice
	case SectionChecker:
		return 10 * time.Minute
	case SectionReference:
		return 2*time.Minute + time.Duration(o.Repeats)*12*o.Slice
	case SectionStartup:
		return 2*time.Minute + time.Duration(o.StartupRepeats)*time.Minute
	case SectionConsumers:
		return 2*time.Minute + time.Duration(o.Repeats)*3*time.Minute
	case SectionClients:
		return 10*time.Minute + time.Duration(o.Repeats)*2*time.Minute + time.Duration(o.ClientSeeds)*3*time.Minute
	}
	return 2*time.Minute + time.Duration(o.DemoRuns)*5*time.Minute
}

// Gate says whether the evidence holds: every mutant caught at every seed,
// and no violation, inconclusive verdict or error on the correct reference.
// It judges the detection and false-alarm sections that ran, and fails
// when neither did.
func (r *Report) Gate() error {
	var bad []string
	for _, s := range r.Sections {
		if s.Err != "" && (s.Name == SectionDetection || s.Name == SectionFalseAlarms || s.Name == SectionForeign) {
			bad = append(bad, fmt.Sprintf("section %s did not finish: %s", s.Name, s.Err))
		}
	}
	if r.Detection == nil && r.FalseAlarms == nil && r.Foreign == nil {
		bad = append(bad, "neither detection, false-alarms nor foreign ran")
	}
	if r.Foreign != nil {
		bad = append(bad, r.Foreign.failures()...)
	}
	if d := r.Detection; d != nil {
		for _, m := range d.Mutants {
			for _, e := range m.Escapes {
				bad = append(bad, fmt.Sprintf("mutant %s escaped seed %d (%s)", m.Mutant, e.Seed, e.Reason))
			}
		}
		for _, v := range d.Reference {
			if v.Verdict != VerdictPass {
				bad = append(bad, fmt.Sprintf("correct reference, %s seed %d: %s: %s (history %s)", v.Scenario, v.Seed, v.Verdict, v.Reason, v.History))
			}
		}
	}
	if f := r.FalseAlarms; f != nil {
		for _, v := range f.Bad {
			bad = append(bad, fmt.Sprintf("correct reference, %s seed %d: %s: %s (history %s)", v.Scenario, v.Seed, v.Verdict, v.Reason, v.History))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d failures:\n  %s", ErrGate, len(bad), strings.Join(bad, "\n  "))
}
