package reference_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/idemchaos/idemchaos/reference"
)

func TestIdempotencyStatus_ReportsEachState(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{InitialBalance: 1000})
	if r := s.get(t, "/v1/idempotency/unknown", "tok-t1"); r.status != http.StatusNotFound {
		t.Fatalf("unknown key: %v, want 404", r)
	}
	if r := s.get(t, "/v1/idempotency/x", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("no token: %v, want 401", r)
	}

	failpoint(t, s.url, "after-claim", "pause", 1)
	inflight := s.postAsync(t, order{key: "busy"})
	awaitFailpoint(t, s.url, "after-claim", 1, 1)
	var st struct {
		State     string `json:"state"`
		Retryable bool   `json:"retryable"`
		Response  *struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		} `json:"response"`
	}
	if err := json.Unmarshal(s.get(t, "/v1/idempotency/busy", "tok-t1").body, &st); err != nil || st.State != "processing" || st.Response != nil || st.Retryable {
		t.Fatalf("in flight: %+v %v, want processing, not retryable, no response", st, err)
	}
	release(t, s.url, "after-claim")
	done := <-inflight

	st.Response = nil
	if err := json.Unmarshal(s.get(t, "/v1/idempotency/busy", "tok-t1").body, &st); err != nil || st.State != "succeeded" || st.Response == nil ||
		st.Response.Status != http.StatusCreated || st.Response.Body != string(done.body) {
		t.Fatalf("after success: %+v %v, want succeeded with the stored 201", st, err)
	}

	s.post(t, order{key: "poor", body: `{"sku":"A","qty":1,"amount":5000}`})
	st.Response = nil
	if err := json.Unmarshal(s.get(t, "/v1/idempotency/poor", "tok-t1").body, &st); err != nil || st.State != "failed" || st.Retryable ||
		st.Response == nil || st.Response.Status != http.StatusPaymentRequired {
		t.Fatalf("business failure: %+v %v, want failed, stored 402, not retryable", st, err)
	}
}
