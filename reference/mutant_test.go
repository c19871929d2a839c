package reference_test

import (
	"slices"
	"testing"

	"github.com/idemchaos/idemchaos/reference"
)

func TestMutants_CatalogueComplete(t *testing.T) {
	t.Parallel()
	want := []string{"no-key", "check-then-insert", "execute-then-record", "body-hash-key", "no-fingerprint",
		"empty-replay", "regenerate-on-replay", "global-namespace", "processing-reexecutes", "no-lease",
		"replica-read", "short-retention", "consumer-no-dedupe", "callback-accumulates", "commit-after-response"}
	invariants := []string{"exactly-once", "replay-identical", "reuse-rejected", "in-flight-conflict",
		"tenant-isolation", "eventually-decided", "durable-ack"}
	var got []string
	for _, m := range reference.Mutants() {
		got = append(got, m.Name)
		if m.Pitfall == "" || !slices.Contains(invariants, m.Invariant) {
			t.Errorf("mutant %s: pitfall %q, invariant %q (want one of DESIGN §4)", m.Name, m.Pitfall, m.Invariant)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("mutants %v, want %v", got, want)
	}
	ms := reference.Mutants()
	ms[0].Name = "changed"
	if reference.Mutants()[0].Name != "no-key" {
		t.Fatal("Mutants returned the package's own slice")
	}
}
