package clientpath

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/faults"
)

func TestAnswer_TheReferencesErrorShapeWithRetryAfterRoundedUp(t *testing.T) {
	w := httptest.NewRecorder()
	h, body := Answer(w, faults.Answer{Status: 429, Code: "rate_limited", RetryAfter: 1500 * time.Millisecond})
	if w.Code != 429 || h.Get("Retry-After") != "2" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, headers %v", w.Code, h)
	}
	if string(body) != `{"error":"rate_limited","message":"429 from idemchaos's fault proxy"}` || w.Body.String() != string(body) {
		t.Fatalf("body %s", body)
	}
	w = httptest.NewRecorder()
	h, body = Answer(w, faults.Answer{Status: 504, Body: "upstream timed out", Headers: map[string]string{"Content-Type": "text/plain"}})
	if h.Get("Content-Type") != "text/plain" || string(body) != "upstream timed out" {
		t.Fatalf("the scenario's shape was not kept: %v %q", h, body)
	}
}

func TestRetryAfterMS(t *testing.T) {
	for v, want := range map[string]int64{"": 0, "3": 3000, " 0 ": 0, "-1": 0, "soon": 0, http.TimeFormat: 0} {
		if got := RetryAfterMS(v); got != want {
			t.Errorf("RetryAfterMS(%q) = %d, want %d", v, got, want)
		}
	}
	if got := RetryAfterMS(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); got < 3500_000 || got > 3600_000 {
		t.Errorf("an HTTP-date an hour ahead: %d ms", got)
	}
}
