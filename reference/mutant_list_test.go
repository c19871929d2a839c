package reference_test

import (
	"context"
	"slices"
	"testing"

	"github.com/idemchaos/idemchaos/harness/pgtest"
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

func TestMigrate_Idempotent(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	ctx := context.Background()
	done := make(chan error, 3)
	for range 3 {
		go func() { done <- reference.Migrate(ctx, dsn) }()
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
	if err := reference.Migrate(ctx, dsn); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
}

func TestReadEffects_AttributesEveryEffect(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	req := order{key: "k"}
	r, err := s.tryPostIntent(req, "intent-7")
	if err != nil || r.status != 201 {
		t.Fatalf("order: %v %v", r, err)
	}
	id := jsonField(t, r.body, "id")
	callback(t, s, reference.DefaultProviderToken, "tx", id, "paid", 1)
	drain(t, s.dsn, "")
	all, err := reference.ReadEffects(context.Background(), s.dsn)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range all {
		kinds[e.Kind]++
		if e.Tenant != "t1" || e.Key != "k" || e.OrderID != id || e.Intent != "intent-7" || e.ID == "" {
			t.Errorf("effect %+v not attributed to t1/k/%s/intent-7", e, id)
		}
	}
	for _, k := range []string{reference.EffectOrder, reference.EffectLedger, reference.EffectNotification, reference.EffectPaymentCredit} {
		if kinds[k] != 1 {
			t.Errorf("%d %s effects, want 1", kinds[k], k)
		}
	}
}
