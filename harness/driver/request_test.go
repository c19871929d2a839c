package driver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
)

// seen is what a test server received.
type seen struct {
	path, tenantHeader, key, auth string
	body                          []byte
}

func recordingServer(t *testing.T, status int) (*httptest.Server, func() []seen) {
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.URL.RequestURI(), r.Header.Get("X-Org"), r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization"), b})
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen { mu.Lock(); defer mu.Unlock(); return append([]seen(nil), got...) }
}

// Every attempt is rendered from its own final tenant and key: a client
// that takes a new key per retry sends that key in the body too, and the
// tenant goes where the template declares it.
func TestRun_RendersEveryAttemptFromItsTenantAndKey(t *testing.T) {
	t.Parallel()
	srv, got := recordingServer(t, http.StatusServiceUnavailable)
	tmpl := &driver.Template{
		Path:     "/t/{{tenant}}/orders?src={{intent}}",
		Headers:  map[string]string{"Content-Type": "application/json", "X-Trace": "{{key}}"},
		Body:     `{"tenant":"{{tenant}}","key":"{{key}}","qty":{{qty}}}`,
		TenantIn: driver.TenantInHeader, TenantName: "x-org",
	}
	in := driver.Intent{ID: "i1", Tenant: "acme co", Key: "k1", Method: "POST", Vars: map[string]string{"qty": "2"},
		Path: "/stale", Body: []byte(`{"tenant":"someone else"}`)}
	h, _ := run(t, driver.Config{BaseURL: srv.URL, Template: tmpl, Model: driver.KeyPerAttempt,
		Retry: driver.RetryPolicy{MaxAttempts: 2, Base: time.Millisecond, Max: time.Millisecond}}, []driver.Intent{in})
	reqs := got()
	if len(reqs) != 2 || len(h.Attempts) != 2 {
		t.Fatalf("server saw %d requests, history %d attempts; want 2", len(reqs), len(h.Attempts))
	}
	for i, want := range []string{"k1", "k1-r2"} {
		r := reqs[i]
		if r.key != want || r.path != "/t/acme%20co/orders?src=i1" || r.tenantHeader != "acme co" || r.auth != "" {
			t.Errorf("attempt %d: key %q path %q X-Org %q auth %q", i+1, r.key, r.path, r.tenantHeader, r.auth)
		}
		var body map[string]any
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("attempt %d: body %s: %v", i+1, r.body, err)
		}
		if wantBody := map[string]any{"tenant": "acme co", "key": want, "qty": 2.0}; !reflect.DeepEqual(body, wantBody) {
			t.Errorf("attempt %d: body %v, want %v", i+1, body, wantBody)
		}
	}
}

func TestRun_TenantInQuery(t *testing.T) {
	t.Parallel()
	srv, got := recordingServer(t, http.StatusCreated)
	tmpl := &driver.Template{Path: "/orders", Body: `{}`, TenantIn: driver.TenantInQuery, TenantName: "org"}
	run(t, driver.Config{BaseURL: srv.URL, Template: tmpl, Tokens: map[string]string{"t2": "tok-2"}},
		[]driver.Intent{{ID: "i1", Tenant: "t2", Key: "k", Method: "POST", Vars: map[string]string{}}})
	if r := got(); len(r) != 1 || r[0].path != "/orders?org=t2" || r[0].auth != "Bearer tok-2" {
		t.Fatalf("got %+v; want /orders?org=t2 with the tenant's token", r)
	}
}

func TestApplyVariant(t *testing.T) {
	t.Parallel()
	body := []byte(`{"sku":"A&B","qty":1,"items":[{"n":2.50}],"ok":true}`)
	cases := map[string]string{
		"":                          `{"sku":"A&B","qty":1,"items":[{"n":2.50}],"ok":true}`,
		driver.VariantReserialised:  `{ "ok": true, "items": [ { "n": 2.50 } ], "qty": 1, "sku": "A&B" }`,
		driver.VariantRetypedString: `{"sku":"A&B","qty":"1","items":[{"n":2.50}],"ok":true}`,
		driver.VariantRetypedBool:   `{"sku":"A&B","qty":true,"items":[{"n":2.50}],"ok":true}`,
		driver.VariantWrapped(7):    `{"reused_by":7,"was":{"sku":"A&B","qty":1,"items":[{"n":2.50}],"ok":true}}`,
	}
	for v, want := range cases {
		if got := string(driver.ApplyVariant(v, body)); got != want {
			t.Errorf("%q:\n got %s\nwant %s", v, got, want)
		}
	}
	// A boolean stands for 0 or 1 only: another number is left alone.
	if got := string(driver.ApplyVariant(driver.VariantRetypedBool, []byte(`{"qty":3,"gift":1}`))); got != `{"qty":3,"gift":true}` {
		t.Errorf("retyped-bool of qty 3 and gift 1: %s", got)
	}
	if got := string(driver.ApplyVariant(driver.VariantRetypedBool, []byte(`{"qty":3}`))); got != `{"qty":3}` {
		t.Errorf("retyped-bool with no 0 or 1: %s", got)
	}
	// Not JSON: nothing to re-serialise or retype.
	if got := string(driver.ApplyVariant(driver.VariantRetypedString, []byte("qty=1"))); got != "qty=1" {
		t.Errorf("retyped a non-JSON body: %s", got)
	}
}

// The retry budget bounds an intent in time: a server that never answers
// definitely is asked until an attempt went out after the budget, then no more.
func TestRun_RetryBudgetBoundsTime(t *testing.T) {
	t.Parallel()
	srv, got := recordingServer(t, http.StatusConflict) // in flight, no Retry-After
	budget := 150 * time.Millisecond
	h, _ := run(t, driver.Config{BaseURL: srv.URL,
		Retry: driver.RetryPolicy{MaxAttempts: 1000, Base: 5 * time.Millisecond, Max: 10 * time.Millisecond, Budget: budget}}, intents(1, "t1"))
	n := len(h.Attempts)
	if n < 3 || n >= 1000 || len(got()) != n {
		t.Fatalf("%d attempts (server saw %d); want several, stopped by the budget", n, len(got()))
	}
	first, last := h.Attempts[0].Invoke, h.Attempts[n-1].Invoke
	prev := h.Attempts[n-2].Invoke
	if span := time.Duration(last - first); span < budget {
		t.Errorf("last attempt %s after the first; the budget is %s", span, budget)
	}
	if time.Duration(prev-first) >= budget {
		t.Errorf("an attempt after the one past the budget was sent")
	}
}

func TestRetryPolicy_DefaultOutlastsDecisionBound(t *testing.T) {
	t.Parallel()
	srv, _ := recordingServer(t, http.StatusConflict)
	h, _ := run(t, driver.Config{BaseURL: srv.URL}, intents(1, "t1"))
	n := len(h.Attempts)
	if span := time.Duration(h.Attempts[n-1].Invoke - h.Attempts[0].Invoke); span < 5*time.Second {
		t.Errorf("the default client asked for %s (%d attempts); the default decision bound is 5s", span, n)
	}
}
