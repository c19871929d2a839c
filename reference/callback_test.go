package reference_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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
	body := fmt.Sprintf(`{"provider_tx":%q,"order_id":%q,"status":%q,"amount":%d}`, tx, orderID, status, amount)
	return postSigned(t, s.url+"/v1/callbacks/payment", token, signed(body), body)
}

// A callback without a signature, with a forged one, with one over
// another body, or signed too long ago (a captured callback replayed) is
// refused with 400 before anything is stored: the same provider tx then
// applies once properly signed (seed 002 §八 ①).
func TestPaymentCallback_SignatureVerifiedFirst(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	id := newPaidOrder(t, s, "k")
	body := fmt.Sprintf(`{"provider_tx":"tx-1","order_id":%q,"status":"paid","amount":500}`, id)
	secret := []byte(reference.DefaultProviderSecret)
	for name, c := range map[string]struct{ sig, code string }{
		"missing":      {"", "missing_signature"},
		"malformed":    {"v1=abc", "invalid_signature"},
		"forged":       {reference.SignCallback([]byte("whsec_attacker"), []byte(body), time.Now()), "invalid_signature"},
		"another body": {reference.SignCallback(secret, []byte(body+" "), time.Now()), "invalid_signature"},
		"stale":        {reference.SignCallback(secret, []byte(body), time.Now().Add(-reference.SignatureTolerance-time.Minute)), "stale_signature"},
	} {
		r := postSigned(t, s.url+"/v1/callbacks/payment", reference.DefaultProviderToken, c.sig, body)
		if r.status != http.StatusBadRequest || jsonField(t, r.body, "error") != c.code {
			t.Errorf("%s signature: %v, want 400 %s", name, r, c.code)
		}
	}
	if n := queryInt(t, s.dsn, `SELECT count(*) FROM payment_callbacks`); n != 0 {
		t.Fatalf("%d callbacks stored from refused deliveries, want 0", n)
	}
	if n := effects(t, s.dsn, reference.EffectPaymentCredit, "t1", "k"); n != 0 {
		t.Fatalf("%d credits from refused deliveries, want 0", n)
	}
	// Two secrets while one is rotated: either v1 verifies.
	rotated := reference.SignCallback([]byte("whsec_old"), []byte(body), time.Now()) + ",v1=" + strings.SplitN(signed(body), "v1=", 2)[1]
	if r := postSigned(t, s.url+"/v1/callbacks/payment", reference.DefaultProviderToken, rotated, body); r.status != http.StatusOK || jsonField(t, r.body, "result") != "applied" {
		t.Fatalf("properly signed after the refusals: %v, want 200 applied", r)
	}
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
