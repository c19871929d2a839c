package reference_test

import (
	"errors"
	"slices"
	"strings"
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

// A pitfall is told in plain English: a reader cannot open the articles the
// mutants came from, and a headless browser draws CJK text as boxes.
func TestMutants_PitfallsInPlainEnglish(t *testing.T) {
	t.Parallel()
	for _, m := range reference.Mutants() {
		if strings.Contains(m.Pitfall, "seed ") || strings.Contains(m.Pitfall, "§") {
			t.Errorf("mutant %s cites a source a user cannot open: %q", m.Name, m.Pitfall)
		}
		for _, r := range m.Pitfall {
			if r >= 0x2E80 {
				t.Errorf("mutant %s: pitfall has %q, not plain English", m.Name, r)
				break
			}
		}
	}
}

func TestLookupMutant_SuggestsTheClosest(t *testing.T) {
	t.Parallel()
	if m, err := reference.LookupMutant("replica-read"); err != nil || !m.Standby || m.Consumer {
		t.Fatalf("replica-read = %+v, %v: it needs a standby", m, err)
	}
	if m, err := reference.LookupMutant("consumer-no-dedupe"); err != nil || !m.Consumer {
		t.Fatalf("consumer-no-dedupe = %+v, %v: it needs the consumer", m, err)
	}
	if m, err := reference.LookupMutant(""); err != nil || m.Name != "" {
		t.Fatalf(`"" = %+v, %v: the correct service`, m, err)
	}
	_, err := reference.LookupMutant("no-keys")
	if !errors.Is(err, reference.ErrUnknownMutant) || !strings.Contains(err.Error(), `did you mean "no-key"?`) {
		t.Fatalf("no-keys: %v", err)
	}
}
