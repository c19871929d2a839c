package reference_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/idemchaos/idemchaos/reference"
)

func newPaidOrder(t *testing.T, s *svc, key string) string {
	t.Helper()
	r := s.post(t, order{key: key})
	if r.status != http.StatusCreated {
		t.Fatalf("order: %v", r)
	}
	return jsonField(t, r.body, "id")
}

func callback(t *testing.T, s *svc, token, tx, orderID, status string, amount int) reply {
	t.Helper()
	return postJSON(t, s.url+"/v1/callbacks/payment", token,
		fmt.Sprintf(`{"provider_tx":%q,"order_id":%q,"status":%q,"amount":%d}`, tx, orderID, status, amount))
}

func TestPaymentCallback_RedeliveryDeduplicated(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	id := newPaidOrder(t, s, "k")
	first := callback(t, s, reference.DefaultProviderToken, "tx-1", id, "paid", 500)
	if first.status != http.StatusOK || jsonField(t, first.body, "result") != "applied" {
		t.Fatalf("first delivery: %v", first)
	}
	for range 3 {
		again := callback(t, s, reference.DefaultProviderToken, "tx-1", id, "paid", 500)
		if again.status != http.StatusOK || jsonField(t, again.body, "result") != "duplicate" {
			t.Fatalf("redelivery: %v, want 200 duplicate", again)
		}
	}
	if n := effects(t, s.dsn, reference.EffectPaymentCredit, "t1", "k"); n != 1 {
		t.Fatalf("%d credits, want 1", n)
	}
	if c := queryInt(t, s.dsn, `SELECT credited FROM accounts WHERE tenant = 't1'`); c != 500 {
		t.Fatalf("credited %d, want 500", c)
	}
}

func TestPaymentCallback_StateOnlyMovesForwardAndCreditsOncePerOrder(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	id := newPaidOrder(t, s, "k")
	steps := []struct {
		tx, status string
		amount     int
		result     string
		state      string
	}{
		{"tx-a", "paid", 500, "applied", "paid"},
		{"tx-b", "paid", 999, "ignored", "paid"},         // another provider tx, same transition: no second credit
		{"tx-c", "fulfilled", 0, "applied", "fulfilled"}, // forward
		{"tx-d", "paid", 500, "ignored", "fulfilled"},    // late, out of order: never backwards
	}
	for _, st := range steps {
		r := callback(t, s, reference.DefaultProviderToken, st.tx, id, st.status, st.amount)
		if r.status != http.StatusOK || jsonField(t, r.body, "result") != st.result || jsonField(t, r.body, "order_state") != st.state {
			t.Fatalf("%s %s: %v, want %s / %s", st.tx, st.status, r, st.result, st.state)
		}
	}
	if n := effects(t, s.dsn, reference.EffectPaymentCredit, "t1", "k"); n != 1 {
		t.Fatalf("%d credits, want 1", n)
	}
	if c := queryInt(t, s.dsn, `SELECT credited FROM accounts WHERE tenant = 't1'`); c != 500 {
		t.Fatalf("credited %d, want the order's 500 (never the callback's amount)", c)
	}
}

func TestPaymentCallback_Rejections(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	if r := callback(t, s, "tok-t1", "tx", "ord_x", "paid", 1); r.status != http.StatusUnauthorized {
		t.Errorf("tenant token on the provider endpoint: %v, want 401", r)
	}
	if r := callback(t, s, reference.DefaultProviderToken, "tx", "ord_missing", "paid", 1); r.status != http.StatusNotFound {
		t.Errorf("unknown order: %v, want 404", r)
	}
	if r := callback(t, s, reference.DefaultProviderToken, "tx", "ord_x", "refunded", 1); r.status != http.StatusBadRequest {
		t.Errorf("unknown status: %v, want 400", r)
	}
	// The 404 stored nothing: the same provider tx works once the order exists.
	id := newPaidOrder(t, s, "k")
	if r := callback(t, s, reference.DefaultProviderToken, "tx", id, "paid", 1); jsonField(t, r.body, "result") != "applied" {
		t.Errorf("after the order exists: %v, want applied", r)
	}
}

func TestPaymentCallback_ConcurrentDeliveriesCreditOnce(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{MaxConns: 8})
	id := newPaidOrder(t, s, "k")
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			tx := fmt.Sprintf("tx-%d", i%4) // four provider transactions, each delivered four times
			if r := callback(t, s, reference.DefaultProviderToken, tx, id, "paid", 500); r.status != http.StatusOK {
				t.Errorf("delivery %s: %v", tx, r)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := effects(t, s.dsn, reference.EffectPaymentCredit, "t1", "k"); n != 1 {
		t.Fatalf("%d credits, want 1", n)
	}
	if n := queryInt(t, s.dsn, `SELECT count(*) FROM payment_callbacks`); n != 4 {
		t.Fatalf("%d recorded provider transactions, want 4", n)
	}
}
