package bench

import (
	"context"

	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/internal/refbench"
)

// ReferenceResult is the reference-versus-pgbench section: the service,
// served in-process on a throwaway database, against pgbench running the
// same SQL (see internal/refbench). Rates are per second, one sample per
// slice; latencies are over every request of the workload.
type ReferenceResult struct {
	Concurrency int
	Slice       string
	// New keys: the service's requests/s and pgbench's transactions/s.
	SvcNew, PgNew Summary
	// Replays: the same, for a key that already has a stored response.
	SvcReplay, PgReplay Summary
	// HTTPFloor and PgxFloor are the two halves of a replay alone.
	HTTPFloor, PgxFloor Summary
	// Ceiling is the floors in series (overall rates).
	Ceiling float64
	// Overall rates and p99 latencies (ms) of each workload.
	SvcNewRate, PgNewRate, SvcReplayRate, PgReplayRate float64
	SvcNewP99, PgNewP99, SvcReplayP99, PgReplayP99     float64
	PgbenchVersion                                     string
	// Client is the service's load generator (see refbench.Result.Client).
	Client string
}

func (b *bench) reference(ctx context.Context) error {
	local, err := env.StartLocal(ctx, env.LocalConfig{})
	if err != nil {
		return err
	}
	defer local.Close(context.WithoutCancel(ctx))
	dsn, err := local.Primary().CreateDatabase(ctx, "refbench")
	if err != nil {
		return err
	}
	res, err := refbench.Run(ctx, refbench.Config{DSN: dsn, Pgbench: b.opts.Pgbench, Wrk: b.opts.Wrk, Concurrency: b.opts.Concurrency,
		Slice: b.opts.Slice, Rounds: b.opts.Repeats, Logf: b.logf})
	if res == nil {
		return err
	}
	ms := func(p *refbench.Phase) float64 { return p.P99().Seconds() * 1000 }
	b.rep.Reference = &ReferenceResult{Concurrency: res.Concurrency, Slice: b.opts.Slice.String(),
		SvcNew: Summarize(res.SvcNew.Rates), PgNew: Summarize(res.PgNew.Rates),
		SvcReplay: Summarize(res.SvcReplay.Rates), PgReplay: Summarize(res.PgReplay.Rates),
		HTTPFloor: Summarize(res.HTTPFloor.Rates), PgxFloor: Summarize(res.PgxFloor.Rates), Ceiling: res.Ceiling(),
		SvcNewRate: res.SvcNew.Rate(), PgNewRate: res.PgNew.Rate(), SvcReplayRate: res.SvcReplay.Rate(), PgReplayRate: res.PgReplay.Rate(),
		SvcNewP99: ms(&res.SvcNew), PgNewP99: ms(&res.PgNew), SvcReplayP99: ms(&res.SvcReplay), PgReplayP99: ms(&res.PgReplay),
		PgbenchVersion: res.PgbenchVersion, Client: res.Client}
	return err
}
