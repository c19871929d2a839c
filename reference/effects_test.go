package reference_test

import (
	"context"
	"testing"

	"github.com/idemchaos/idemchaos/reference"
)

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
		if e.Kind == reference.EffectCallback {
			// The provider's: its transaction, for the order it names.
			if e.Tenant != "provider" || e.Key != "tx" || e.OrderID != id {
				t.Errorf("callback effect %+v, want provider/tx for %s", e, id)
			}
			continue
		}
		if e.Kind == reference.EffectOrder && (e.State != "paid" || e.StateAt.IsZero()) {
			t.Errorf("order effect %+v: want its state paid and when it changed", e)
		}
		if e.Tenant != "t1" || e.Key != "k" || e.OrderID != id || e.Intent != "intent-7" || e.ID == "" {
			t.Errorf("effect %+v not attributed to t1/k/%s/intent-7", e, id)
		}
	}
	for _, k := range []string{reference.EffectOrder, reference.EffectLedger, reference.EffectNotification, reference.EffectPaymentCredit, reference.EffectCallback} {
		if kinds[k] != 1 {
			t.Errorf("%d %s effects, want 1", kinds[k], k)
		}
	}
}
