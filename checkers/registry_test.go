package checkers

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

// The registry keeps the canonical order of DESIGN §4 whatever order the
// files' init functions ran in.
func TestRegistryNamesInCanonicalOrder(t *testing.T) {
	want := []string{"exactly-once", "replay-identical", "reuse-rejected", "in-flight-conflict", "tenant-isolation", "eventually-decided", "durable-ack"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		c, err := ByName(n)
		if err != nil || c.Name() != n {
			t.Fatalf("ByName(%q) = %v, %v", n, c, err)
		}
	}
	if _, err := ByName("exactly-one"); !errors.Is(err, ErrUnknownInvariant) || !strings.Contains(err.Error(), "known: exactly-once, replay-identical") {
		t.Fatalf("ByName of an unknown name: %v", err)
	}
}

// The checks are started in the order the old hand-written table gave:
// exactly-once, tenant-isolation, in-flight-conflict, eventually-decided,
// then the rest in their own order.
func TestRegistryStartOrder(t *testing.T) {
	a := Default().(all)
	var got []string
	for _, i := range runOrder(a) {
		got = append(got, a[i].Name())
	}
	want := []string{"exactly-once", "tenant-isolation", "in-flight-conflict", "eventually-decided", "replay-identical", "reuse-rejected", "durable-ack"}
	if !slices.Equal(got, want) {
		t.Fatalf("start order %v, want %v", got, want)
	}
}

type namedChecker string

func (n namedChecker) Name() string { return string(n) }
func (n namedChecker) Check(*history.History, []history.Effect) Result {
	return Result{Name: string(n)}
}

// A new invariant is one registration: ByName finds it, a suite lists it,
// and the server suite is untouched.
func TestRegisterNewInvariant(t *testing.T) {
	if _, err := ByName("test-only-invariant"); err != nil { // once per process, under -count
		Register(Registration{Name: "test-only-invariant", New: func(...Option) Checker { return namedChecker("test-only-invariant") }, Suites: map[string]int{"test-suite": 1}})
	}
	if c, err := ByName("test-only-invariant"); err != nil || c.Name() != "test-only-invariant" {
		t.Fatalf("ByName: %v, %v", c, err)
	}
	if got := SuiteNames("test-suite"); !slices.Equal(got, []string{"test-only-invariant"}) {
		t.Fatalf("SuiteNames = %v", got)
	}
	if slices.Contains(Names(), "test-only-invariant") {
		t.Fatal("an invariant of another suite joined the server suite")
	}
	if !slices.Contains(Known(), "test-only-invariant") {
		t.Fatal("Known misses a registered invariant")
	}
}

// Two files claiming one name, or a checker answering to another name, is
// a bug the registry refuses at start-up.
func TestRegisterRefusesDuplicatesAndMismatches(t *testing.T) {
	for name, r := range map[string]Registration{
		"duplicate": {Name: "exactly-once", New: ExactlyOnce},
		"mismatch":  {Name: "not-exactly-once", New: ExactlyOnce},
		"no New":    {Name: "nothing"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Register did not panic")
				}
			}()
			Register(r)
		})
	}
}
