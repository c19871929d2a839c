package pgcluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

// Run with: go test ./internal/pgcluster -run '^$' -bench . -benchtime 10x
// Each benchmark reports the median, min and max of its iterations in ms.

// report adds median/min/max custom metrics for samples.
func report(b *testing.B, samples []time.Duration) {
	b.Helper()
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(samples[len(samples)/2]), "median-ms")
	b.ReportMetric(ms(samples[0]), "min-ms")
	b.ReportMetric(ms(samples[len(samples)-1]), "max-ms")
}

// benchStart measures, per iteration, the time from nothing (cold: a fresh
// run directory, so initdb included; warm: the run's template exists) to a
// ready primary, with a standby if standby is set. Teardown is not timed.
func benchStart(b *testing.B, cold, standby bool) {
	ctx := context.Background()
	var shared *runenv.Run
	if !cold {
		var err error
		if shared, err = runenv.Open(ctx, runenv.Options{NoReap: true}); err != nil {
			b.Fatal(err)
		}
		defer shared.Close(ctx)
		c, err := pgcluster.Start(ctx, pgcluster.Config{Run: shared}) // builds the template
		if err != nil {
			b.Fatal(err)
		}
		_ = c.Close(ctx)
	}
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		run := shared
		if cold {
			var err error
			if run, err = runenv.Open(ctx, runenv.Options{NoReap: true}); err != nil {
				b.Fatal(err)
			}
		}
		c, err := pgcluster.Start(ctx, pgcluster.Config{Run: run, Standby: standby})
		if err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
		b.StopTimer()
		if err := c.Close(ctx); err != nil {
			b.Fatal(err)
		}
		if cold {
			_ = run.Close(ctx)
		}
		b.StartTimer()
	}
	b.StopTimer()
	report(b, samples)
}

func BenchmarkStart_ColdPrimary(b *testing.B)        { benchStart(b, true, false) }
func BenchmarkStart_ColdPrimaryStandby(b *testing.B) { benchStart(b, true, true) }
func BenchmarkStart_WarmPrimary(b *testing.B)        { benchStart(b, false, false) }
func BenchmarkStart_WarmPrimaryStandby(b *testing.B) { benchStart(b, false, true) }

// BenchmarkClose measures teardown of a primary and its standby: immediate
// shutdown and directory removal.
func BenchmarkClose(b *testing.B) {
	ctx := context.Background()
	run, err := runenv.Open(ctx, runenv.Options{NoReap: true})
	if err != nil {
		b.Fatal(err)
	}
	defer run.Close(ctx)
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		c, err := pgcluster.Start(ctx, pgcluster.Config{Run: run, Standby: true})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := c.Close(ctx); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	report(b, samples)
}
