package reference_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/reference"
)

func TestServe_LogsCarryRequestIDTenantAndKey(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	s.post(t, order{key: "log-key"})
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/orders", strings.NewReader(defaultBody))
	req.Header.Set("Authorization", "Bearer tok-t2")
	req.Header.Set("Idempotency-Key", "log-key-2")
	req.Header.Set("X-Request-ID", "req-42")
	r, err := do(req)
	if err != nil || r.header.Get("X-Request-ID") != "req-42" {
		t.Fatalf("request id not echoed: %v %v", r.header, err)
	}
	// Each line is written once its response is out, so the first
	// request's may come after the second's.
	s.logs.waitFor(t, `"request_id":"req-42"`)
	s.logs.waitFor(t, `"idempotency_key":"log-key",`)
	requests := 0
	sc := bufio.NewScanner(strings.NewReader(s.logs.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("not a JSON log line: %s", sc.Text())
		}
		if line["msg"] != "request" {
			continue
		}
		requests++
		for _, f := range []string{"request_id", "tenant", "idempotency_key", "status", "outcome"} {
			if _, ok := line[f]; !ok {
				t.Errorf("log line without %s: %s", f, sc.Text())
			}
		}
		if line["request_id"] == "req-42" && (line["tenant"] != "t2" || line["idempotency_key"] != "log-key-2") {
			t.Errorf("wrong tenant/key on %s", sc.Text())
		}
	}
	if requests < 2 {
		t.Fatalf("%d request lines, want 2", requests)
	}
}

func TestServe_MetricsCountOutcomes(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	s.post(t, order{key: "m"})                                         // executed
	s.post(t, order{key: "m"})                                         // replayed
	s.post(t, order{key: "m", body: `{"sku":"Z","qty":1,"amount":1}`}) // rejected (422)
	failpoint(t, s.url, "after-claim", "pause", 1)
	held := s.postAsync(t, order{key: "n"})
	awaitFailpoint(t, s.url, "after-claim", 1, 1)
	s.post(t, order{key: "n"}) // conflict
	release(t, s.url, "after-claim")
	<-held
	body := string(s.get(t, "/metrics", "").body)
	for _, outcome := range []string{"executed", "replayed", "rejected", "conflict"} {
		want := `idemchaos_reference_requests_total{outcome="` + outcome + `",route="POST /v1/orders"}`
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestServe_Healthz(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	if r := s.get(t, "/healthz", ""); r.status != http.StatusOK {
		t.Fatalf("healthz: %v", r)
	}
}

func TestServe_DebugEndpointsAbsentUnlessEnabled(t *testing.T) {
	t.Parallel()
	s := startServiceAsIs(t, reference.Config{})
	for _, path := range []string{"/debug/failpoints", "/debug/failpoints/after-claim"} {
		if r := s.get(t, path, ""); r.status != http.StatusNotFound {
			t.Errorf("GET %s without --failpoints: %v, want 404", path, r)
		}
	}
	if r := postJSON(t, s.url+"/debug/failpoints/after-claim", "", `{"action":"crash"}`); r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed {
		t.Errorf("arming without --failpoints: %v, want 404", r)
	}
	if r := postJSON(t, s.url+"/debug/purge", "", ""); r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed {
		t.Errorf("purge without --failpoints: %v, want 404", r)
	}
	// And the service still works (the crash point did not arm).
	if r := s.post(t, order{key: "k"}); r.status != http.StatusCreated {
		t.Fatalf("order: %v", r)
	}
}

func TestFailpoints_ListAndValidate(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	var list []struct{ Name string }
	if err := json.Unmarshal(s.get(t, "/debug/failpoints", "").body, &list); err != nil || len(list) < 8 {
		t.Fatalf("list: %v %v", list, err)
	}
	if r := postJSON(t, s.url+"/debug/failpoints/no-such-point", "", `{"action":"pause"}`); r.status != http.StatusNotFound {
		t.Errorf("unknown point: %v, want 404", r)
	}
	if r := postJSON(t, s.url+"/debug/failpoints/after-claim", "", `{"action":"explode"}`); r.status != http.StatusBadRequest {
		t.Errorf("unknown action: %v, want 400", r)
	}
	if r := postJSON(t, s.url+"/debug/failpoints/after-claim?action=pause&count=1", "", ""); r.status != http.StatusOK {
		t.Errorf("query-string form: %v, want 200", r)
	}
	held := s.postAsync(t, order{key: "k"})
	awaitFailpoint(t, s.url, "after-claim", 1, 1)
	if r := postJSON(t, s.url+"/debug/failpoints/after-claim/release", "", ""); r.status != http.StatusOK {
		t.Fatalf("release: %v", r)
	}
	if r := <-held; r.status != http.StatusCreated {
		t.Fatalf("released request: %v", r)
	}
}
