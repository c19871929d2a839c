package faults_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idemchaos/idemchaos/faults"
)

// serviceWorld is a fake world whose service is a real HTTP server.
type serviceWorld struct {
	*fakeWorld
	url string
}

func (w serviceWorld) ServiceURL() string { return w.url }

// The service receives the attempt's exact bytes as many times as asked,
// and the client gets exactly one answer: the first copy's.
func TestDuplicateDelivery_DeliversTheSameBytesTwiceAnswersOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	release := make(chan struct{})
	svc := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Idempotency-Key")+" "+string(b))
		n := len(got)
		mu.Unlock()
		if n == 2 {
			close(release) // both copies are in: they arrived together
		}
		<-release
		rw.Header().Set("X-Copy", strings.Repeat("i", n))
		rw.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(rw, `{"id":"o1"}`)
	}))
	defer svc.Close()
	w := serviceWorld{fakeWorld: &fakeWorld{}, url: svc.URL}
	f := &faults.DuplicateDelivery{}
	if err := f.Validate(); err != nil || f.Copies != 2 {
		t.Fatalf("defaults: %v, copies %d", err, f.Copies)
	}
	r, err := f.Route(context.Background(), w, faults.Attempt{Op: 3, Number: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Fresh || r.Done == nil || !strings.HasPrefix(r.BaseURL, "http://127.0.0.1:") {
		t.Fatalf("route %+v: want a fresh connection to a loopback proxy", r)
	}
	req, _ := http.NewRequest(http.MethodPost, r.BaseURL+"/v1/orders", strings.NewReader(`{"sku":"A-100"}`))
	req.Header.Set("Idempotency-Key", "k-1")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.Done()
	if resp.StatusCode != http.StatusCreated || string(body) != `{"id":"o1"}` {
		t.Fatalf("client got %d %q, want the service's 201", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	want := `POST /v1/orders k-1 {"sku":"A-100"}`
	if len(got) != 2 || got[0] != want || got[1] != want {
		t.Fatalf("service received %q, want the same request twice", got)
	}
	if strings.Join(w.events, "|") != "duplicate-delivery fire" {
		t.Fatalf("events %v, want one firing recorded", w.events)
	}
}

func TestDuplicateDelivery_RefusesWhatItCannotDo(t *testing.T) {
	t.Parallel()
	for _, f := range []*faults.DuplicateDelivery{{Copies: 1}, {Copies: 11}, {Gap: -1}} {
		if err := f.Validate(); !errors.Is(err, faults.ErrInvalidParams) {
			t.Errorf("%+v: Validate = %v, want invalid params", f, err)
		}
	}
	w := serviceWorld{fakeWorld: &fakeWorld{}, url: "https://127.0.0.1:1"}
	if _, err := (&faults.DuplicateDelivery{Copies: 2}).Route(context.Background(), w, faults.Attempt{}); !errors.Is(err, faults.ErrUnsupported) {
		t.Fatalf("https upstream: %v, want unsupported", err)
	}
}
