// Package partcheck checks a history too large for memory: it splits the
// history by idempotency key into partitions in one streaming pass
// ([SplitFile]), checks the partitions in parallel, each alone in
// memory, and merges their results into the result the in-memory check
// gives on the whole history ([checkers.Merge]).
//
// Every check but tenant-isolation judges the attempts and effects of one
// key (and of the intents that used it) together, so partitions by key hash
// hold everything it needs, plus the events every partition gets (meta,
// faults, interrupted) and the few facts of the whole history the split
// counts on the way (successes, 5xx rate, number of keys, last time).
// Tenant-isolation compares responses across keys, so it runs over a second
// set of partitions cut by the hash of the response body.
//
// A client run's history is cut by intent (its attempts are attributed to
// their intent by ground truth, whatever key they carry), so every client
// invariant that judges one intent is exact in its partition; intents that
// share a key are checked together; what compares all intents (backoff's
// growth and lockstep, bounded's global budget, the counts in reasons)
// travels in each checker's [checkers.Part] to the merge.
package partcheck

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// Options says how to split and check.
type Options struct {
	// Partitions is how many partitions the history is cut into (N).
	Partitions int
	// Only, when >= 0, checks only partition Only of N: the keys whose
	// hash is Only (and the responses whose body hash is Only), so that N
	// machines can share one history. -1 checks them all.
	Only int
	// Workers checks this many partitions at once (0: every core).
	Workers int
	// Dir is where the partition files go (empty: the system's temporary
	// directory); they are removed when the check ends.
	Dir string
	// Contract and Names choose the checks, as [checkers.ForContract] does.
	Contract checkers.Contract
	Names    []string
	// MaxTime is the time budget of each partition's check (0: none).
	MaxTime time.Duration
	// Context, when set, stops the check early (Ctrl-C): the split stops
	// reading, no further partition is checked, and the partition files
	// are removed before CheckFile returns its error.
	Context context.Context
}

// ctxReader stops a read when its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Summary is what the check tells about the whole history besides the
// verdicts: the counts a loaded [history.History] would carry.
type Summary struct {
	Meta        history.Event
	Events      int
	Truncated   bool
	Interrupted string
	// Checked lists the key partitions this process checked.
	Checked []int
	// KeySequences are, for a client run's history, the keys of each
	// intent that changed key, in the order sent
	// ([history.KeySequences]), for the report.
	KeySequences map[string][]string
}

const tenantIsolation = "tenant-isolation"

// CheckFile checks the history in the named file partition by partition.
// A malformed line is a [*history.LineError] numbered as in the file.
// With [Options.Only] set, the result is that partition's alone; [Check]
// and [Merge] give the whole history's from every partition's.
func CheckFile(name string, o Options) (*Summary, checkers.Judgement, error) {
	p, err := Check(name, o)
	if err != nil {
		return nil, checkers.Judgement{}, err
	}
	return merge([]*Partial{p})
}

// Check checks the history in the named file partition by partition, as
// [CheckFile] does, and returns what it found before the merge: with
// [Options.Only] set, one machine's share, which [Merge] joins with the
// others' (through [Partial.MarshalJSON] when they ran elsewhere).
func Check(name string, o Options) (*Partial, error) {
	if o.Partitions < 1 {
		return nil, fmt.Errorf("partitions: %d, want at least 1", o.Partitions)
	}
	if o.Only >= o.Partitions {
		return nil, fmt.Errorf("partition %d/%d: the index must be below the count", o.Only, o.Partitions)
	}
	if err := o.Contract.Validate(); err != nil {
		return nil, err
	}
	settings, err := settingsOf(o)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	src := Source{Name: name}
	if st, err := f.Stat(); err == nil {
		src.Size = st.Size()
	}
	dir, err := os.MkdirTemp(o.Dir, "idemchaos-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	var in io.Reader = ctxReader{ctx, f}
	var sum hash.Hash
	if o.Only >= 0 {
		// One machine's share: the merge must know that every share was
		// cut from the same bytes. The split reads the whole file anyway;
		// hashing it on the way costs a few percent.
		sum = sha256.New()
		in = io.TeeReader(in, sum)
	}
	sp, err := SplitFile(in, dir, o.Partitions)
	if err != nil {
		return nil, err
	}
	names := o.Names
	if len(names) == 0 {
		names = checkers.DefaultNames(sp.Meta.Mode)
	}
	if sum != nil && sp.Err == nil {
		// The split stops at the first malformed line or the end: drain
		// what it left so the hash covers the file.
		if _, err := io.Copy(io.Discard, in); err != nil {
			return nil, err
		}
		src.SHA256 = hex.EncodeToString(sum.Sum(nil))
	}
	// The executed (tenant, key)s are read from disk on the first
	// question; a failed read fails the check once the partitions are done.
	var (
		execMu  sync.Mutex
		execErr error
	)
	g := &checkers.Globals{Successes: sp.Successes, Answers: sp.Answers, Failures: sp.Failures, Keys: sp.Keys,
		Executed: func(tenant, key string) bool {
			ok, err := sp.Executed(tenant, key)
			if err != nil {
				execMu.Lock()
				execErr = cmp.Or(execErr, err)
				execMu.Unlock()
			}
			return ok
		}}
	opts := append(o.Contract.Options(), checkers.WithGlobals(g))
	var keyNames []string
	bodies := false
	for _, n := range names {
		if n == tenantIsolation {
			bodies = true
		} else {
			keyNames = append(keyNames, n)
		}
	}
	type unit struct {
		parts   []Part
		ordered bool
		names   []string
		key     int // the key partition a key unit starts with, -1 for a body unit
		body    int // the body partition of a body unit
	}
	var units []unit
	out := &Partial{Index: o.Only, Total: o.Partitions, Source: src, Invariants: names, Settings: settings, Contract: o.Contract,
		meta: sp.Meta, Events: sp.Events, Truncated: sp.Truncated, Interrupted: sp.Interrupted}
	for _, grp := range sp.Groups {
		// Key units are loaded even with no check of theirs to run: the
		// verdict rules read their facts (what each step's attempts got).
		if o.Only >= 0 && grp[0] != o.Only {
			continue
		}
		u := unit{names: keyNames, ordered: true, key: grp[0]}
		for _, i := range grp {
			u.parts = append(u.parts, sp.KeyParts[i])
		}
		units = append(units, u)
		out.Checked = append(out.Checked, grp...)
	}
	for i, p := range sp.BodyParts {
		if bodies && (o.Only < 0 || i == o.Only) {
			units = append(units, unit{parts: []Part{p}, names: []string{tenantIsolation}, key: -1, body: i})
		}
	}
	// Each unit's results wait for the merge encoded
	// ([checkers.MarshalPartial]): a sixth of their size in memory, and
	// nothing for the collector to scan; at 30M events the detached
	// results of every partition checked so far made ~180 MB.
	results := make([][]partResult, len(units))
	facts := make([]checkers.Facts, len(units))
	seqs := make([]map[string][]string, len(units))
	errs := make([]error, len(units))
	// Twin questions (a write acknowledged and lost) are gathered as each
	// unit is checked.
	var qMu sync.Mutex
	q := map[checkers.TwinScope]bool{}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(len(units), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				u := units[i]
				steps, f, seq, err := checkUnit(ctx, u.parts, u.ordered, u.names, opts, o, sp)
				if err != nil {
					errs[i] = err
					continue
				}
				if u.key < 0 {
					// The answers of a generic body that the split did not
					// write to its body partition were judged all the same:
					// counted (in the whole history's step).
					steps[len(steps)-1][0].Checked += sp.Unrouted[u.body]
				} else {
					facts[i], seqs[i] = f, seq
				}
				qMu.Lock()
				for _, res := range steps {
					for _, r := range res {
						maps.Copy(q, checkers.TwinQueries(r))
					}
				}
				qMu.Unlock()
				results[i], errs[i] = encode(steps, u.names)
			}
		}()
	}
	for i := range units {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := firstError(sp.Err, errs); err != nil {
		return nil, err
	}
	if execErr != nil {
		return nil, fmt.Errorf("executed keys: %w", execErr)
	}
	// A write acknowledged and lost: its likely cause may be an intent
	// with the same body under a key of another partition, of any machine's
	// share. A second pass over every key partition finds it; only a
	// failing history pays for it. An interrupted history's violations are
	// dropped at the merge: no pass for them.
	if len(q) > 0 && sp.Interrupted == "" {
		var twins []checkers.Twin
		for _, grp := range sp.Groups {
			// An interrupt stops the second pass between groups too: on a
			// big history it is minutes of loading.
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			var parts []Part
			for _, i := range grp {
				parts = append(parts, sp.KeyParts[i])
			}
			t, err := twinsOf(ctx, parts, q, opts, o, sp)
			if err != nil {
				return nil, err
			}
			twins = append(twins, t...)
		}
		for _, rs := range results {
			for j := range rs {
				r, err := checkers.UnmarshalPartial(rs[j].enc)
				if err != nil {
					return nil, err
				}
				if rs[j].enc, err = checkers.MarshalPartial(checkers.ResolveTwins(r, twins)); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := range units {
		out.results = append(out.results, results[i]...)
		out.facts.Add(facts[i])
		for in, seq := range seqs[i] {
			if out.KeySequences == nil {
				out.KeySequences = map[string][]string{}
			}
			out.KeySequences[in] = seq
		}
	}
	return out, nil
}

// encode encodes a unit's results, step by step, for the merge.
func encode(steps [][]checkers.Part, names []string) ([]partResult, error) {
	var out []partResult
	for k, res := range steps {
		for j, r := range res {
			enc, err := checkers.MarshalPartial(r)
			if err != nil {
				return nil, err
			}
			out = append(out, partResult{name: names[j], step: k, enc: enc})
		}
	}
	return out, nil
}

// merge joins partials, ordered by index, into the judgement of the
// whole: step by step, checker by checker in the order asked, each
// checker's parts in the order the in-memory check of every partition
// would have met them; then the verdict rules over the facts of every
// partition ([checkers.Decide]).
func merge(parts []*Partial) (*Summary, checkers.Judgement, error) {
	first := parts[0]
	sum := &Summary{Meta: first.meta, Events: first.Events, Truncated: first.Truncated, Interrupted: first.Interrupted}
	var facts checkers.Facts
	for _, p := range parts {
		sum.Checked = append(sum.Checked, p.Checked...)
		facts.Add(p.facts)
		for in, seq := range p.KeySequences {
			if sum.KeySequences == nil {
				sum.KeySequences = map[string][]string{}
			}
			sum.KeySequences[in] = seq
		}
	}
	n := len(facts.Steps)
	for _, p := range parts {
		for _, r := range p.results {
			n = max(n, r.step+1)
		}
	}
	steps := make([]checkers.Result, max(n, 1))
	for k := range steps {
		// What cut the history short or off is in its last step alone.
		interrupted, truncated := "", false
		if k == len(steps)-1 {
			interrupted, truncated = first.Interrupted, first.Truncated
		}
		var merged []checkers.Result
		for _, name := range first.Invariants {
			// One checker's results decoded at a time.
			var rs []checkers.Part
			for _, p := range parts {
				for _, r := range p.results {
					if r.name == name && r.step == k {
						res, err := checkers.UnmarshalPartial(r.enc)
						if err != nil {
							return nil, checkers.Judgement{}, fmt.Errorf("partition result %s: %w", name, err)
						}
						rs = append(rs, res)
					}
				}
			}
			merged = append(merged, checkers.Merge(rs, interrupted, truncated))
		}
		steps[k] = checkers.Combine(merged...)
	}
	return sum, checkers.Decide(facts, steps, first.Contract.Options()...), nil
}

// twinsOf returns the executed intents of some partitions that sent a
// body asked about, placed by the line of their first attempt.
func twinsOf(ctx context.Context, parts []Part, q map[checkers.TwinScope]bool, opts []checkers.Option, o Options, sp *Split) ([]checkers.Twin, error) {
	h, err := LoadParts(parts, true, o.Contract.LoadOptions())
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	h.End, h.EffectsKnown, h.IntentsKnown = sp.End, sp.EffectsKnown, sp.IntentsKnown
	lines, err := InvokeLines(parts)
	if err != nil {
		return nil, err
	}
	if len(lines) != len(h.Attempts) {
		return nil, fmt.Errorf("partition: %d invoke lines for %d attempts", len(lines), len(h.Attempts))
	}
	twins := checkers.ExecutedTwins(h, h.Effects, q, opts...)
	for i := range twins {
		twins[i].Order = lines[twins[i].Attempt]
	}
	return twins, nil
}

// checkUnit loads some partitions as one history and checks it step by
// step, each step on the history up to its end, and reads its facts for
// the verdict rules. The facts of the whole history replace the
// partition's own: its end, whether effects were recorded; interruption
// and truncation are settled at the merge, so that no partition drops its
// violations.
func checkUnit(ctx context.Context, parts []Part, ordered bool, names []string, opts []checkers.Option, o Options, sp *Split) ([][]checkers.Part, checkers.Facts, map[string][]string, error) {
	load := o.Contract.LoadOptions()
	h, err := LoadParts(parts, ordered, load)
	if err == nil {
		// The checks themselves cannot be stopped; an interrupt that came
		// during the load spares them.
		err = ctx.Err()
	}
	if err != nil {
		return nil, checkers.Facts{}, nil, err
	}
	h.End, h.EffectsKnown, h.IntentsKnown = sp.End, sp.EffectsKnown, sp.IntentsKnown
	h.Interrupted, h.Truncated = "", false
	facts := checkers.FactsOf(h)
	var seqs map[string][]string
	if h.Client() {
		// A client history's partitions hold whole intents.
		seqs = history.KeySequences(h)
	}
	if len(names) == 0 {
		return nil, facts, seqs, nil
	}
	cs := make([]checkers.Checker, 0, len(names))
	for _, n := range names {
		c, err := checkers.ByName(n, opts...)
		if err != nil {
			return nil, checkers.Facts{}, nil, err
		}
		cs = append(cs, c)
	}
	c := checkers.All(cs...)
	if o.MaxTime > 0 {
		c = checkers.WithDeadline(c, o.MaxTime)
	}
	steps := make([][]checkers.Part, h.StepCount())
	for k := range steps {
		p := h.Through(k)
		// Detached, a result waiting for the merge does not keep the
		// partition's history alive: without it, every partition checked
		// so far stays in memory.
		res := checkers.CheckParts(c, p, p.Effects)
		for i := range res {
			res[i] = checkers.Detach(res[i], opts...)
		}
		steps[k] = res
	}
	return steps, facts, seqs, nil
}

// firstError returns the error of the earliest line, as a load of the
// whole history would have met it first.
func firstError(split *history.LineError, errs []error) error {
	var best *history.LineError
	if split != nil {
		best = split
	}
	for _, err := range errs {
		if err == nil {
			continue
		}
		var le *history.LineError
		if !errors.As(err, &le) {
			return err
		}
		if best == nil || le.Line < best.Line {
			best = le
		}
	}
	if best == nil {
		return nil
	}
	return best
}
