package reference_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/reference"
)

func TestOrders_CreateThenReplayByteIdentical(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	first := s.post(t, order{key: "k-1"})
	if first.status != http.StatusCreated || first.replayed() {
		t.Fatalf("first = %v (replayed %v), want fresh 201", first, first.replayed())
	}
	if first.header.Get("Location") == "" {
		t.Errorf("201 without Location")
	}
	for range 2 {
		again := s.post(t, order{key: "k-1"})
		if again.status != first.status || !bytes.Equal(again.body, first.body) || !again.replayed() {
			t.Fatalf("replay = %v (replayed %v), want %v byte for byte with Idempotent-Replayed", again, again.replayed(), first)
		}
		if again.header.Get("Location") != first.header.Get("Location") {
			t.Errorf("replayed Location %q, want %q", again.header.Get("Location"), first.header.Get("Location"))
		}
	}
	for _, kind := range []string{reference.EffectOrder, reference.EffectLedger} {
		if n := effects(t, s.dsn, kind, "t1", "k-1"); n != 1 {
			t.Errorf("%d %s effects, want 1", n, kind)
		}
	}
	if n := queryInt(t, s.dsn, `SELECT count(*) FROM outbox_events`); n != 1 {
		t.Errorf("%d outbox events, want 1", n)
	}
}

func TestOrders_KeyValidation(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	cases := map[string]struct {
		key    string
		status int
	}{
		"missing":         {"", http.StatusBadRequest},
		"too long":        {strings.Repeat("k", 256), http.StatusBadRequest},
		"space":           {"a b", http.StatusBadRequest},
		"non-ascii":       {"clé", http.StatusBadRequest},
		"tab":             {"a\tb", http.StatusBadRequest},
		"longest allowed": {strings.Repeat("k", 255), http.StatusCreated},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/orders", strings.NewReader(defaultBody))
			req.Header.Set("Authorization", "Bearer tok-t2")
			if tc.key != "" {
				req.Header["Idempotency-Key"] = []string{tc.key}
			}
			r, err := do(req)
			if err != nil {
				t.Fatal(err)
			}
			if r.status != tc.status {
				t.Fatalf("status %v, want %d", r, tc.status)
			}
		})
	}
	if n := queryInt(t, s.dsn, `SELECT count(*) FROM orders`); n != 1 {
		t.Errorf("%d orders, want 1 (only the valid key)", n)
	}
}

func TestOrders_ReuseWithDifferentPayloadRejected(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	first := s.post(t, order{key: "k", body: `{"sku":"A","qty":1,"amount":10}`})
	other := s.post(t, order{key: "k", body: `{"sku":"B","qty":1,"amount":10}`})
	if other.status != http.StatusUnprocessableEntity || bytes.Equal(other.body, first.body) {
		t.Fatalf("reuse = %v, want 422 and not the first response", other)
	}
	if n := effects(t, s.dsn, reference.EffectOrder, "t1", "k"); n != 1 {
		t.Fatalf("%d orders, want 1", n)
	}
}

func TestOrders_FingerprintIgnoresJSONFormatting(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	first := s.post(t, order{key: "k", body: `{"sku":"A","qty":1,"amount":10}`})
	again := s.post(t, order{key: "k", body: "{ \"amount\": 10,\n \"qty\": 1, \"sku\": \"A\" }"})
	if !again.replayed() || !bytes.Equal(again.body, first.body) {
		t.Fatalf("re-serialised retry = %v, want replay of %v", again, first)
	}
}

func TestOrders_InvalidBodyRejected(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	for _, body := range []string{`not json`, `[]`, `{"sku":"","qty":1,"amount":1}`, `{"sku":"A","qty":0,"amount":1}`, `{"sku":"A","qty":1,"amount":0}`, `{"sku":"A","qty":1,"amount":1} {}`} {
		if r := s.post(t, order{key: "k", body: body}); r.status != http.StatusBadRequest {
			t.Errorf("body %s: %v, want 400", body, r)
		}
	}
	// Nothing was stored: the same key still works.
	if r := s.post(t, order{key: "k"}); r.status != http.StatusCreated {
		t.Fatalf("valid request after rejects = %v, want 201", r)
	}
}

func TestOrders_BodyLimit(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	big := `{"sku":"A","qty":1,"amount":1,"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/orders", strings.NewReader(big))
	req.Header.Set("Authorization", "Bearer tok-t1")
	req.Header.Set("Idempotency-Key", "k")
	// The server refuses before reading: without 100-continue the client
	// could still be writing when the connection closes.
	req.Header.Set("Expect", "100-continue")
	r, err := do(req)
	if err != nil || r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("1 MiB+ body = %v %v, want 413", r, err)
	}
	if r := s.post(t, order{key: "k", body: `{"sku":"A","qty":1,"amount":1,"pad":"` + strings.Repeat("x", 1<<19) + `"}`}); r.status != http.StatusCreated {
		t.Fatalf("512 KiB body = %v, want 201", r.status)
	}
}

func TestOrders_Unauthorized(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	for _, tok := range []string{"nope", "tok-t1x", ""} {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/orders", strings.NewReader(defaultBody))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		req.Header.Set("Idempotency-Key", "k")
		if r, err := do(req); err != nil || r.status != http.StatusUnauthorized {
			t.Errorf("token %q: %v %v, want 401", tok, r, err)
		}
	}
}

func TestOrders_InFlightDuplicateGets409(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	failpoint(t, s.url, "after-claim", "pause", 1)
	first := s.postAsync(t, order{key: "k"})
	awaitFailpoint(t, s.url, "after-claim", 1, 1)
	dup := s.post(t, order{key: "k"})
	if dup.status != http.StatusConflict || dup.header.Get("Retry-After") == "" {
		t.Fatalf("duplicate in flight = %v (Retry-After %q), want 409 with Retry-After", dup, dup.header.Get("Retry-After"))
	}
	release(t, s.url, "after-claim")
	r := <-first
	if r.status != http.StatusCreated {
		t.Fatalf("first = %v, want 201", r)
	}
	if again := s.post(t, order{key: "k"}); !bytes.Equal(again.body, r.body) {
		t.Fatalf("retry after 409 = %v, want the replay %v", again, r)
	}
	if n := effects(t, s.dsn, reference.EffectOrder, "t1", "k"); n != 1 {
		t.Fatalf("%d orders, want 1", n)
	}
}

func TestOrders_BusinessFailureStoredAndReplayed(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{InitialBalance: 100})
	first := s.post(t, order{key: "k", body: `{"sku":"A","qty":1,"amount":500}`})
	if first.status != http.StatusPaymentRequired {
		t.Fatalf("over balance = %v, want 402", first)
	}
	again := s.post(t, order{key: "k", body: `{"sku":"A","qty":1,"amount":500}`})
	if again.status != http.StatusPaymentRequired || !again.replayed() || !bytes.Equal(again.body, first.body) {
		t.Fatalf("retry = %v, want the stored 402 replayed", again)
	}
	if n := queryInt(t, s.dsn, `SELECT count(*) FROM orders`); n != 0 {
		t.Fatalf("%d orders after a business failure, want 0", n)
	}
	if b := queryInt(t, s.dsn, `SELECT balance FROM accounts WHERE tenant = 't1'`); b != 100 {
		t.Fatalf("balance %d, want 100 (never negative, untouched)", b)
	}
	if r := s.post(t, order{key: "k2", body: `{"sku":"A","qty":1,"amount":60}`}); r.status != http.StatusCreated {
		t.Fatalf("affordable order = %v, want 201", r)
	}
	if r := s.post(t, order{key: "k3", body: `{"sku":"A","qty":1,"amount":60}`}); r.status != http.StatusPaymentRequired {
		t.Fatalf("second affordable order exceeding the rest = %v, want 402", r)
	}
}

func TestOrders_SystemErrorReleasesKey(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	failpoint(t, s.url, "after-business-write-before-commit", "pause", 1)
	first := s.postAsync(t, order{key: "k"})
	awaitFailpoint(t, s.url, "after-business-write-before-commit", 1, 1)
	// Kill the request's database session: its commit fails (a system error).
	killed := queryInt(t, s.dsn, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'idle in transaction' AND pid <> pg_backend_pid()`)
	if killed != 1 {
		t.Fatalf("terminated %d sessions, want the 1 open transaction", killed)
	}
	release(t, s.url, "after-business-write-before-commit")
	if r := <-first; r.status != http.StatusInternalServerError {
		t.Fatalf("first = %v, want 500", r)
	}
	if st := jsonField(t, s.get(t, "/v1/idempotency/k", "tok-t1").body, "state"); st != "failed" {
		t.Fatalf("record state %q, want failed", st)
	}
	if r := s.post(t, order{key: "k"}); r.status != http.StatusCreated || r.replayed() {
		t.Fatalf("retry after system error = %v, want a fresh 201", r)
	}
	if n := effects(t, s.dsn, reference.EffectOrder, "t1", "k"); n != 1 {
		t.Fatalf("%d orders, want 1", n)
	}
}

func TestOrders_ExpiredLeaseTakenOverSafely(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	failpoint(t, s.url, "after-claim", "pause", 1)
	holder := s.postAsync(t, order{key: "k"})
	awaitFailpoint(t, s.url, "after-claim", 1, 1)
	ageRecords(t, s.dsn, time.Hour) // the holder's lease has run out: it is presumed dead
	taker := s.post(t, order{key: "k"})
	if taker.status != http.StatusCreated || taker.replayed() {
		t.Fatalf("retry after lease expiry = %v, want a fresh 201", taker)
	}
	release(t, s.url, "after-claim")
	late := <-holder
	if late.status != http.StatusCreated || !bytes.Equal(late.body, taker.body) {
		t.Fatalf("the fenced-out holder answered %v, want the taker's response %v", late, taker)
	}
	if n := effects(t, s.dsn, reference.EffectOrder, "t1", "k"); n != 1 {
		t.Fatalf("%d orders, want 1", n)
	}
}

func TestOrders_TenantsIsolated(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	a := s.post(t, order{token: "tok-t1", key: "shared"})
	if r := s.get(t, "/v1/idempotency/shared", "tok-t2"); r.status != http.StatusNotFound {
		t.Fatalf("tenant t2 sees t1's key: %v", r)
	}
	b := s.post(t, order{token: "tok-t2", key: "shared"})
	if b.status != http.StatusCreated || b.replayed() || bytes.Equal(a.body, b.body) || jsonField(t, b.body, "tenant") != "t2" {
		t.Fatalf("t2 with t1's key = %v, want its own fresh order", b)
	}
	if effects(t, s.dsn, reference.EffectOrder, "t1", "shared") != 1 || effects(t, s.dsn, reference.EffectOrder, "t2", "shared") != 1 {
		t.Fatalf("want one order per tenant")
	}
}

func TestOrders_ConcurrentDuplicatesExecuteOnce(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{MaxConns: 8})
	const racers, keys = 24, 4
	var wg sync.WaitGroup
	replies := make([][]reply, keys)
	var mu sync.Mutex
	start := make(chan struct{})
	for k := range keys {
		for range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r, err := s.tryPost(order{key: "race-" + string(rune('a'+k))})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				replies[k] = append(replies[k], r)
				mu.Unlock()
			}()
		}
	}
	close(start)
	wg.Wait()
	for k := range keys {
		key := "race-" + string(rune('a'+k))
		if n := effects(t, s.dsn, reference.EffectOrder, "t1", key); n != 1 {
			t.Errorf("%s: %d orders, want exactly 1", key, n)
		}
		var body []byte
		fresh := 0
		for _, r := range replies[k] {
			switch {
			case r.status == http.StatusConflict:
			case r.status == http.StatusCreated:
				if !r.replayed() {
					fresh++
				}
				if body != nil && !bytes.Equal(body, r.body) {
					t.Errorf("%s: two different 201 bodies", key)
				}
				body = r.body
			default:
				t.Errorf("%s: unexpected %v", key, r)
			}
		}
		if fresh != 1 {
			t.Errorf("%s: %d fresh executions answered, want 1", key, fresh)
		}
	}
}

func TestOrders_BusinessConstraintBacksUpTheKeyTable(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	s.post(t, order{key: "k"})
	// The key record vanishes (a bug, a manual purge): the business unique
	// constraint still refuses a second order for the same tenant and key.
	execSQL(t, s.dsn, `DELETE FROM idempotency_keys`)
	r := s.post(t, order{key: "k"})
	if r.status != http.StatusConflict || jsonField(t, r.body, "error") != "order_exists" {
		t.Fatalf("retry without a key record = %v, want 409 order_exists", r)
	}
	if again := s.post(t, order{key: "k"}); !again.replayed() || !bytes.Equal(again.body, r.body) {
		t.Fatalf("next retry = %v, want the stored 409 replayed", again)
	}
	if n := effects(t, s.dsn, reference.EffectOrder, "t1", "k"); n != 1 {
		t.Fatalf("%d orders, want 1", n)
	}
	if b := queryInt(t, s.dsn, `SELECT count(*) FROM ledger_entries`); b != 1 {
		t.Fatalf("%d ledger entries, want 1 (the refused attempt's debit rolled back)", b)
	}
}

func TestOrders_ExecuteKeylessMakesAnOrderEachTime(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{ExecuteKeyless: true})
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/orders", strings.NewReader(defaultBody))
		req.Header.Set("Authorization", "Bearer tok-t1")
		r, err := do(req)
		if err != nil {
			t.Fatal(err)
		}
		if r.status != http.StatusCreated {
			t.Fatalf("keyless POST: %v, want 201", r)
		}
	}
	if n := queryInt(t, s.dsn, `SELECT count(*) FROM orders`); n != 2 {
		t.Errorf("%d orders, want 2: a blind re-send is a second order", n)
	}
}
