package foreign_test

import (
	"slices"
	"testing"

	"github.com/idemchaos/idemchaos/examples/foreign"
)

func TestParseSeeds(t *testing.T) {
	for spec, want := range map[string][]int64{
		"3":         {1, 2, 3},
		"52,61":     {52, 61},
		"52,":       {52},
		"30-32, 82": {30, 31, 32, 82},
	} {
		got, err := foreign.ParseSeeds(spec)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", spec, got, err, want)
		}
	}
	for _, spec := range []string{"", "0", "x", "5-3", "1,,-2", ",", "0-4"} {
		if got, err := foreign.ParseSeeds(spec); err == nil {
			t.Errorf("ParseSeeds(%q) = %v; want an error", spec, got)
		}
	}
}
