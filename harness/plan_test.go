package harness

import (
	"testing"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/scenarios"
)

func TestIsAimed_DecidedByWhen(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		f    faults.Fault
		w    scenarios.When
		want bool
	}{
		"response-drop, default when":   {&faults.ResponseDrop{}, scenarios.When{}, true},
		"double-click":                  {&faults.DoubleClick{}, scenarios.When{Fraction: 0.5}, true},
		"latency at a time":             {&faults.Latency{}, scenarios.When{At: 1}, false},
		"latency on a fraction":         {&faults.Latency{}, scenarios.When{Fraction: 0.3}, true},
		"latency on every third intent": {&faults.Latency{}, scenarios.When{Nth: 3}, true},
		"slow-db is only timed":         {&faults.SlowDB{}, scenarios.When{Fraction: 0.3}, false},
		"crash is only timed":           {&faults.Crash{}, scenarios.When{}, false},
	}
	for name, tc := range cases {
		if got := isAimed(tc.f, tc.w); got != tc.want {
			t.Errorf("%s: isAimed = %v, want %v", name, got, tc.want)
		}
	}
}
