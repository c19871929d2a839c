package recorder

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/scenarios"
)

func aimOf(t *testing.T, yaml string) Aim {
	t.Helper()
	specs, err := scenarios.ParseFaults("f.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAim(0, specs[0])
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAim_HitsTheAttemptsItsWhenSays(t *testing.T) {
	for _, c := range []struct {
		name, when string
		index, n   int
		at         time.Duration
		want       bool
	}{
		{"first intent, first attempt", "{}", 0, 1, 0, true},
		{"first intent, a retry", "{}", 0, 2, 0, false},
		{"another intent", "{}", 1, 1, 0, false},
		{"nth picks the 3rd", "{nth: 3}", 2, 1, 0, true},
		{"nth skips the 2nd", "{nth: 3}", 1, 1, 0, false},
		{"attempts spans", "{nth: 1, attempt: 2, attempts: 2}", 4, 3, 0, true},
		{"attempts ends", "{nth: 1, attempt: 2, attempts: 2}", 4, 4, 0, false},
		{"attempts starts", "{nth: 1, attempt: 2, attempts: 2}", 4, 1, 0, false},
		{"every", "{nth: 1, every: true}", 7, 9, 0, true},
		{"window in", "{at: 1s, for: 2s}", 5, 3, 2 * time.Second, true},
		{"window before", "{at: 1s, for: 2s}", 5, 3, 500 * time.Millisecond, false},
		{"window after", "{at: 1s, for: 2s}", 5, 3, 3 * time.Second, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := aimOf(t, "faults:\n  - kind: gateway-5xx\n    when: "+c.when+"\n")
			if got := a.hits(1, "checkout", c.index, c.n, c.at); got != c.want {
				t.Errorf("hits(index %d, attempt %d, at %s) = %v, want %v", c.index, c.n, c.at, got, c.want)
			}
		})
	}
}

// A fraction hits about that share of intents, the same ones for a seed
// whatever order they arrive in, and others for another seed.
func TestAim_FractionIsDrawnFromTheSeedAndTheIntent(t *testing.T) {
	a := aimOf(t, "faults:\n  - kind: response-drop\n    when: {fraction: 0.25}\n")
	hit, moved := 0, 0
	for i := range 2000 {
		name := fmt.Sprintf("intent-%d", i)
		h := a.hits(7, name, i, 1, 0)
		if h != a.hits(7, name, 2000-i, 1, 0) {
			t.Fatalf("%s: hit depends on its arrival order", name)
		}
		if h {
			hit++
		}
		if h != a.hits(8, name, i, 1, 0) {
			moved++
		}
	}
	if hit < 400 || hit > 600 {
		t.Errorf("fraction 0.25 hit %d of 2000 intents", hit)
	}
	if moved == 0 {
		t.Error("another seed hit the same intents")
	}
}

func TestNew_FaultsNeedAnIntentHeader(t *testing.T) {
	a := aimOf(t, "faults:\n  - kind: response-drop\n")
	if _, err := New(nil, Options{Upstream: &url.URL{Scheme: "http", Host: "127.0.0.1:9"}, Faults: []Aim{a}}); err == nil {
		t.Fatal("faults without an intent header were taken")
	}
}
