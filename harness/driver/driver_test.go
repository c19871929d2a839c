package driver_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
)

// run executes intents against url and returns the loaded history.
func run(t *testing.T, cfg driver.Config, intents []driver.Intent) (*history.History, driver.Stats) {
	t.Helper()
	var buf bytes.Buffer
	rec, err := driver.NewRecorder(history.NewWriter(&buf), t.Name(), 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Recorder = rec
	st, err := driver.Run(context.Background(), cfg, intents)
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.Load(&buf, history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h, st
}

func intents(n int, tenant string) []driver.Intent {
	out := make([]driver.Intent, n)
	for i := range out {
		out[i] = driver.Intent{ID: fmt.Sprintf("i%d", i), Tenant: tenant, Key: fmt.Sprintf("k%d", i), Method: "POST", Path: "/v1/orders", Body: []byte(`{"sku":"A"}`)}
	}
	return out
}

func TestRun_RecordsEveryAttemptExactlyOnce(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		k := r.Header.Get("Idempotency-Key")
		mu.Lock()
		seen[k]++
		n := seen[k]
		mu.Unlock()
		if n == 1 && strings.HasSuffix(k, "3") {
			w.WriteHeader(http.StatusServiceUnavailable) // retried by the correct client
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, k)
	}))
	defer srv.Close()
	h, st := run(t, driver.Config{BaseURL: srv.URL, Tokens: map[string]string{"t1": "tok-1"}, Concurrency: 4,
		Retry: driver.RetryPolicy{Base: time.Millisecond, Max: 2 * time.Millisecond}}, intents(40, "t1"))
	if got := int64(len(h.Attempts)); got != served.Load() || got != st.Requests {
		t.Fatalf("history has %d attempts, server saw %d, stats say %d", got, served.Load(), st.Requests)
	}
	if len(h.Attempts) != 44 { // 40 intents + 4 retried 503s (k3, k13, k23, k33)
		t.Fatalf("got %d attempts, want 44", len(h.Attempts))
	}
	for _, a := range h.Attempts {
		if !a.Done() || a.Outcome != history.OK {
			t.Fatalf("attempt %+v did not complete ok", a)
		}
		if a.Status == 201 && a.Number != 1 && !strings.HasSuffix(a.Key, "3") {
			t.Fatalf("unexpected retry %+v", a)
		}
	}
}

// closeAfterOne is a raw HTTP/1.1 server that answers the first request on
// each connection with keep-alive, then reads the second request and closes
// the connection without answering: the situation in which http.Transport
// silently re-sends a request it considers replayable.
type closeAfterOne struct {
	ln       net.Listener
	received atomic.Int64
}

func newCloseAfterOne(t *testing.T) *closeAfterOne {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &closeAfterOne{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *closeAfterOne) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for i := 0; ; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		s.received.Add(1)
		if i == 1 {
			return // read, executed, connection dropped without an answer
		}
		fmt.Fprintf(c, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}")
	}
}

func TestRun_NoSilentTransportResend(t *testing.T) {
	t.Parallel()
	t.Run("the trap exists", func(t *testing.T) {
		// A plain client re-sends the keyed POST on a new connection: the
		// server receives more requests than the caller made.
		srv := newCloseAfterOne(t)
		client := &http.Client{Transport: &http.Transport{}}
		for i := 0; i < 4; i++ {
			req, _ := http.NewRequest("POST", "http://"+srv.ln.Addr().String()+"/", strings.NewReader("{}"))
			req.Header.Set("Idempotency-Key", fmt.Sprint(i))
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body) // a drained body lets the connection be reused
				resp.Body.Close()
			}
		}
		if srv.received.Load() <= 4 {
			t.Fatalf("expected http.Transport to re-send: server saw %d requests for 4 calls", srv.received.Load())
		}
	})
	t.Run("the driver records every send", func(t *testing.T) {
		srv := newCloseAfterOne(t)
		h, _ := run(t, driver.Config{BaseURL: "http://" + srv.ln.Addr().String(), Concurrency: 1,
			Retry: driver.RetryPolicy{MaxAttempts: 1}}, intents(6, "t1"))
		if int64(len(h.Attempts)) != srv.received.Load() {
			t.Fatalf("history has %d attempts but the server received %d requests", len(h.Attempts), srv.received.Load())
		}
		info := 0
		for _, a := range h.Attempts {
			if a.Outcome == history.Info {
				info++
			}
		}
		if info == 0 {
			t.Fatal("no attempt met the dropped connection; the test did not exercise the trap")
		}
	})
}

func TestRun_ClientModels(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		model    driver.Model
		status   int
		header   string
		attempts int
		sameKey  bool
	}{
		"correct never retries 422":            {driver.Correct, 422, "", 1, true},
		"retry-4xx retries 422":                {driver.Retry4xx, 422, "", 3, true},
		"correct retries 429":                  {driver.Correct, 429, "0", 3, true},
		"correct retries 409 with Retry-After": {driver.Correct, 409, "0", 3, true},
		"correct retries 409 without it":       {driver.Correct, 409, "", 3, true},
		"correct retries 502":                  {driver.Correct, 502, "", 3, true},
		"key-per-attempt changes the key":      {driver.KeyPerAttempt, 503, "", 3, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			h, _ := run(t, driver.Config{BaseURL: srv.URL, Model: tc.model,
				Retry: driver.RetryPolicy{MaxAttempts: 3, Base: time.Millisecond, Max: time.Millisecond}}, intents(1, "t1"))
			if len(h.Attempts) != tc.attempts {
				t.Fatalf("got %d attempts, want %d", len(h.Attempts), tc.attempts)
			}
			keys := map[string]bool{}
			for i, a := range h.Attempts {
				keys[a.Key] = true
				if a.Number != i+1 {
					t.Errorf("attempt %d numbered %d", i+1, a.Number)
				}
			}
			if same := len(keys) == 1; same != tc.sameKey {
				t.Fatalf("keys %v: same=%v, want %v", keys, same, tc.sameKey)
			}
		})
	}
}

func TestRun_DoubleClickSendsCopiesWithOneKey(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.WriteHeader(201)
	}))
	defer srv.Close()
	in := intents(1, "t1")
	in[0].Clicks, in[0].Spread = 3, 5*time.Millisecond
	h, _ := run(t, driver.Config{BaseURL: srv.URL}, in)
	if len(h.Attempts) != 3 || served.Load() != 3 {
		t.Fatalf("got %d attempts, %d served; want 3", len(h.Attempts), served.Load())
	}
	for _, a := range h.Attempts {
		if a.Key != "k0" || a.Number != 1 {
			t.Fatalf("copy %+v: want key k0, attempt 1", a)
		}
	}
}

func TestRun_BoundedByBudgetAndDeadline(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer srv.Close()
	h, st := run(t, driver.Config{BaseURL: srv.URL, MaxRequests: 10}, intents(100, "t1"))
	if len(h.Attempts) != 10 || !st.Budget {
		t.Fatalf("budget: %d attempts, budget flag %v", len(h.Attempts), st.Budget)
	}
	late := intents(3, "t1")
	late[2].At = time.Hour
	h, st = run(t, driver.Config{BaseURL: srv.URL, Deadline: 100 * time.Millisecond}, late)
	if len(h.Attempts) != 2 || !st.Deadline || st.Elapsed > 5*time.Second {
		t.Fatalf("deadline: %d attempts, flag %v, elapsed %s", len(h.Attempts), st.Deadline, st.Elapsed)
	}
}

type routeFunc func(ctx context.Context, a driver.AttemptInfo) (driver.Route, error)

func (f routeFunc) Route(ctx context.Context, a driver.AttemptInfo) (driver.Route, error) {
	return f(ctx, a)
}

func TestRun_RouterAimsAtOneAttempt(t *testing.T) {
	t.Parallel()
	clean := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer clean.Close()
	faulty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(504) }))
	defer faulty.Close()
	in := intents(5, "t1")
	in[2].Faults = map[int]string{1: "gateway-5xx"}
	var done atomic.Int64
	router := routeFunc(func(_ context.Context, a driver.AttemptInfo) (driver.Route, error) {
		if a.Fault == "" {
			return driver.Route{}, nil
		}
		return driver.Route{BaseURL: faulty.URL, Fresh: true, Done: func() { done.Add(1) }}, nil
	})
	h, _ := run(t, driver.Config{BaseURL: clean.URL, Router: router, Retry: driver.RetryPolicy{Base: time.Millisecond}}, in)
	var statuses []int
	for _, a := range h.Attempts {
		if a.Intent == "i2" {
			statuses = append(statuses, a.Status)
		} else if a.Status != 201 {
			t.Fatalf("un-aimed attempt %+v was hit", a)
		}
	}
	if fmt.Sprint(statuses) != "[504 201]" || done.Load() != 1 {
		t.Fatalf("aimed intent got %v (done %d), want [504 201] and one Done", statuses, done.Load())
	}
}

func TestRun_RefusedIsFail(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	h, _ := run(t, driver.Config{BaseURL: "http://" + addr, Retry: driver.RetryPolicy{MaxAttempts: 2, Base: time.Millisecond}}, intents(1, "t1"))
	if len(h.Attempts) != 2 || h.Attempts[0].Outcome != history.Fail {
		t.Fatalf("got %+v, want 2 fail attempts", h.Attempts)
	}
}
