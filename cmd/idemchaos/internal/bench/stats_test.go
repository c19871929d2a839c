package bench_test

import (
	"testing"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
)

func TestSummarize_MedianP90MinMax(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in   []float64
		want bench.Summary
	}{
		"empty": {nil, bench.Summary{}},
		"one":   {[]float64{3}, bench.Summary{N: 1, Median: 3, P90: 3, Min: 3, Max: 3}},
		"odd":   {[]float64{5, 1, 3}, bench.Summary{N: 3, Median: 3, P90: 5, Min: 1, Max: 5}},
		"even":  {[]float64{4, 1, 3, 2}, bench.Summary{N: 4, Median: 2.5, P90: 4, Min: 1, Max: 4}},
		// Nearest rank: the 18th of 20 values.
		"twenty": {[]float64{20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1},
			bench.Summary{N: 20, Median: 10.5, P90: 18, Min: 1, Max: 20}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := append([]float64(nil), tc.in...)
			if got := bench.Summarize(tc.in); got != tc.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", in, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatalf("Summarize sorted its input")
				}
			}
		})
	}
}
