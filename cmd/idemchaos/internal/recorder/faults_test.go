package recorder_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/recorder"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

// A fault that does not forward (rate-limit) answers in the upstream's
// stead, which never sees the attempt; one that forwards (gateway-5xx)
// replaces the answer of an attempt the upstream executed; both are
// recorded by the proxy, and the retry after them is the upstream's.
func TestRecorder_FaultsAnswerInTheUpstreamsStead(t *testing.T) {
	var seen atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if r.Header.Get("X-Intent") != "" {
			t.Error("the intent header reached the upstream")
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer up.Close()
	specs, err := scenarios.ParseFaults("f.yaml", []byte("faults:\n  - kind: rate-limit\n    params: {retry_after: 2s}\n    when: {nth: 2}\n  - kind: gateway-5xx\n"))
	if err != nil {
		t.Fatal(err)
	}
	var aims []recorder.Aim
	for i, s := range specs {
		a, err := recorder.NewAim(i, s)
		if err != nil {
			t.Fatal(err)
		}
		aims = append(aims, a)
	}
	base, events := proxy(t, up.URL, recorder.Options{IntentHeader: "X-Intent", Faults: aims})
	for _, c := range []struct {
		intent string
		want   int
	}{{"a", http.StatusGatewayTimeout}, {"b", http.StatusTooManyRequests}, {"a", http.StatusCreated}, {"b", http.StatusCreated}} {
		if code, _ := post(t, base, "/orders", "{}", map[string]string{"X-Intent": c.intent, "Idempotency-Key": "k-" + c.intent}); code != c.want {
			t.Fatalf("intent %s: %d, want %d", c.intent, code, c.want)
		}
	}
	if n := seen.Load(); n != 3 {
		t.Errorf("the upstream saw %d attempts, want 3 (the 429 was not forwarded)", n)
	}
	evs := events()
	if evs[0].Mode != history.ModeClient {
		t.Errorf("meta mode %q, want client", evs[0].Mode)
	}
	type outcome struct {
		by        string
		forwarded bool
		status    int
		retryMS   int64
	}
	attempt := map[int64][2]any{}
	got := map[int64]outcome{}
	for _, e := range evs {
		switch e.Type {
		case history.TypeInvoke:
			attempt[e.Op] = [2]any{e.Intent, e.Attempt}
		case history.TypeOK:
			got[e.Op] = outcome{e.By, e.Forwarded, e.Resp.Status, e.RetryAfterMS}
		}
	}
	want := map[int64]outcome{1: {"proxy", true, 504, 0}, 2: {"proxy", false, 429, 2000}, 3: {"", false, 201, 0}, 4: {"", false, 201, 0}}
	for op, w := range want {
		if got[op] != w {
			t.Errorf("op %d (intent, attempt %v): %+v, want %+v", op, attempt[op], got[op], w)
		}
	}
	if attempt[3] != [2]any{"a", 2} || attempt[4] != [2]any{"b", 2} {
		t.Errorf("attempts numbered %v, want a and b's retries as attempt 2", attempt)
	}
}

// A stall executes the attempt and holds the client's connection without
// a byte until the client gives up (its own deadline): recorded as info,
// by the proxy, forwarded.
func TestRecorder_StallHoldsUntilTheClientGivesUp(t *testing.T) {
	var seen atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer up.Close()
	specs, err := scenarios.ParseFaults("f.yaml", []byte("faults:\n  - kind: stall\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := recorder.NewAim(0, specs[0])
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(up.URL)
	var buf bytes.Buffer
	rec, err := recorder.New(history.NewWriter(&buf), recorder.Options{Upstream: u, IntentHeader: "X-Intent", Faults: []recorder.Aim{a}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", nil)
	req.Header.Set("X-Intent", "a")
	client := &http.Client{Timeout: 300 * time.Millisecond} // the client's own deadline
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a stalled attempt was answered %d", resp.StatusCode)
	}
	// The stall lets go when the client hangs up; the outcome is then
	// written and the handler returns.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec.Wait(ctx)
	if seen.Load() != 1 {
		t.Fatalf("the upstream saw %d attempts, want 1 (a stall forwards)", seen.Load())
	}
	h, err := history.Load(bytes.NewReader(buf.Bytes()), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != 1 {
		t.Fatalf("%d attempts recorded", len(h.Attempts))
	}
	if at := h.Attempts[0]; at.Outcome != history.Info || !at.Proxied || !at.Forwarded {
		t.Fatalf("attempt %+v, want info by the proxy, forwarded", at)
	}
}
