package recorder_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

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
