package reference_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/internal/refbench"
)

// BenchmarkService_VersusPgbench measures, against one throwaway cluster
// and in one run, the service's requests/s and p99 for new keys and for
// replays at concurrency 16, and pgbench running the same SQL per request
// (claim; debit + record + order + ledger + outbox in one transaction; for
// replays the one claim/lookup statement) as the yardstick. Phases run for
// a fixed time, so the benchmark runs once whatever b.N is:
//
//	go test ./reference/ -run '^$' -bench VersusPgbench -benchtime 1x
//
// The measurement itself lives in internal/refbench, which `idemchaos
// bench` runs too.
func BenchmarkService_VersusPgbench(b *testing.B) {
	res, err := refbench.Run(context.Background(), refbench.Config{DSN: pgtest.Database(b), Dir: b.TempDir()})
	if res == nil {
		b.Fatal(err)
	}
	pgReplay := res.PgReplay.Rate()
	b.ReportMetric(res.Ceiling()/pgReplay, "ceiling_ratio_replay")
	b.ReportMetric(res.SvcNew.Rate(), "svc_new_req/s")
	b.ReportMetric(res.SvcReplay.Rate(), "svc_replay_req/s")
	b.ReportMetric(res.PgNew.Rate(), "pgbench_new_tps")
	b.ReportMetric(pgReplay, "pgbench_replay_tps")
	b.ReportMetric(res.SvcNew.Rate()/res.PgNew.Rate(), "ratio_new")
	b.ReportMetric(res.SvcReplay.Rate()/pgReplay, "ratio_replay")
	b.ReportMetric(ms(res.SvcNew.P99()), "svc_new_p99_ms")
	b.ReportMetric(ms(res.SvcReplay.P99()), "svc_replay_p99_ms")
	b.ReportMetric(ms(res.PgNew.P99()), "pgbench_new_p99_ms")
	b.ReportMetric(ms(res.PgReplay.P99()), "pgbench_replay_p99_ms")
	b.Logf("\n%-22s %10s %10s %10s\n%-22s %10.0f %10.2f %10s\n%-22s %10.0f %10.2f %10.2f\n%-22s %10.0f %10.2f %10s\n%-22s %10.0f %10.2f %10.2f",
		"c=16", "per s", "p99 ms", "ratio",
		"pgbench new keys", res.PgNew.Rate(), ms(res.PgNew.P99()), "",
		"service new keys", res.SvcNew.Rate(), ms(res.SvcNew.P99()), res.SvcNew.Rate()/res.PgNew.Rate(),
		"pgbench replays", pgReplay, ms(res.PgReplay.P99()), "",
		"service replays", res.SvcReplay.Rate(), ms(res.SvcReplay.P99()), res.SvcReplay.Rate()/pgReplay)
	b.Logf("replay ceiling: HTTP alone %.0f/s, claim via pgx alone %.0f/s, both in series %.0f/s = %.2f × pgbench",
		res.HTTPFloor.Rate(), res.PgxFloor.Rate(), res.Ceiling(), res.Ceiling()/pgReplay)
	if err != nil {
		b.Error(err)
	}
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }
