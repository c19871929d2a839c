package clientpath

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// The upstream's answer reaches the client with its length stated, not
// chunked (one write, where a flushed answer of no stated length takes two
// and its client waits for the last chunk), its status, headers and body as
// they were; the header handed in (what the history records) gets no
// Content-Length, and a 204 gets none either.
func TestRelay_OneAnswerWithItsLength(t *testing.T) {
	header := http.Header{"Content-Type": {"application/json"}, "X-Upstream": {"a", "b"}}
	status, body := http.StatusCreated, []byte(`{"id":"ord_1"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/none" {
			Relay(w, r, http.StatusNoContent, http.Header{}, nil)
			return
		}
		Relay(w, r, status, header, body)
	}))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status || string(got) != string(body) || resp.Header.Get("X-Upstream") != "a" || len(resp.Header["X-Upstream"]) != 2 {
		t.Errorf("relayed %d %v %q, want %d %v %q", resp.StatusCode, resp.Header, got, status, header, body)
	}
	if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 {
		t.Errorf("Content-Length %d, Transfer-Encoding %v: want %d, not chunked", resp.ContentLength, resp.TransferEncoding, len(body))
	}
	if _, ok := header["Content-Length"]; ok {
		t.Errorf("the recorded header gained a Content-Length: %v", header)
	}
	resp, err = http.Post(srv.URL+"/none", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Content-Length") != "" {
		t.Errorf("204: status %d, Content-Length %q", resp.StatusCode, resp.Header.Get("Content-Length"))
	}
}
