package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/histgen"
)

// CheckerResult is the checker-throughput section, measured in-process on
// generated clean histories (internal/histgen: 10% duplicates, 5%
// indeterminate, 3 tenants) streamed from a file, as `idemchaos check`
// reads them.
type CheckerResult struct {
	Sizes []CheckerSize
}

// CheckerSize is one history size. Rates are events/s, one sample per
// repeat (each sample loops for at least half a second, after a warm-up).
type CheckerSize struct {
	Events int
	Bytes  int64
	// Decode is the streaming decoder alone (every event decoded, nothing
	// kept); LoadCheck is what `idemchaos check` does (history.Load, then
	// the seven checkers); Check is the seven checkers alone on a loaded
	// history.
	Decode, LoadCheck, Check Summary
}

// NsPerEvent is the median cost of load+check per event.
func (c CheckerSize) NsPerEvent() float64 { return 1e9 / c.LoadCheck.Median }

// Ratio is load+check's cost over the decoder's (medians): how many
// decoder passes a whole check costs.
func (c CheckerSize) Ratio() float64 { return c.Decode.Median / c.LoadCheck.Median }

func (b *bench) checker(ctx context.Context) error {
	res := &CheckerResult{}
	b.rep.Checker = res
	c := checkers.Default()
	for _, n := range b.opts.CheckerSizes {
		data := histgen.Generate(histgen.Default(n))
		f, err := os.CreateTemp("", "idemchaos-bench-*.jsonl")
		if err != nil {
			return err
		}
		path := f.Name()
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		size := int64(len(data))
		data = nil
		if err != nil {
			os.Remove(path)
			return err
		}
		cs, err := b.checkerSize(ctx, c, path, size)
		os.Remove(path)
		if err != nil {
			return err
		}
		res.Sizes = append(res.Sizes, cs)
	}
	return nil
}

func (b *bench) checkerSize(ctx context.Context, c checkers.Checker, path string, size int64) (CheckerSize, error) {
	cs := CheckerSize{Bytes: size}
	decode := func() (int, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		r := history.NewReader(f)
		var e history.Event
		n := 0
		for {
			err := r.Next(&e)
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			n++
		}
	}
	load := func() (*history.History, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return history.Load(f, history.LoadOptions{})
	}
	events, err := decode()
	if err != nil {
		return cs, err
	}
	cs.Events = events
	loaded, err := load()
	if err != nil {
		return cs, err
	}
	if r := c.Check(loaded, loaded.Effects); r.Verdict != checkers.Pass {
		return cs, fmt.Errorf("a clean generated history must pass: %s %v", r.Verdict, r.Failures())
	}
	// sample runs f once to warm up, then until half a second has passed,
	// and returns events/s.
	sample := func(f func() error) (float64, error) {
		if err := f(); err != nil {
			return 0, err
		}
		runtime.GC()
		start, iters := time.Now(), 0
		for iters == 0 || time.Since(start) < 500*time.Millisecond {
			if err := f(); err != nil {
				return 0, err
			}
			iters++
		}
		return float64(events) * float64(iters) / time.Since(start).Seconds(), ctx.Err()
	}
	var dec, lc, chk []float64
	for round := range b.opts.Repeats {
		d, err := sample(func() error { _, err := decode(); return err })
		if err != nil {
			return cs, err
		}
		l, err := sample(func() error {
			h, err := load()
			if err == nil {
				c.Check(h, h.Effects)
			}
			return err
		})
		if err != nil {
			return cs, err
		}
		k, err := sample(func() error { c.Check(loaded, loaded.Effects); return nil })
		if err != nil {
			return cs, err
		}
		dec, lc, chk = append(dec, d), append(lc, l), append(chk, k)
		b.logf("checker %d events, round %d/%d: decode %.2fM/s, load+check %.2fM/s, check %.2fM/s", events, round+1, b.opts.Repeats, d/1e6, l/1e6, k/1e6)
	}
	cs.Decode, cs.LoadCheck, cs.Check = Summarize(dec), Summarize(lc), Summarize(chk)
	return cs, nil
}
