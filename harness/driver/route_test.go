package driver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
)

// routeChoice is what the test router does with one op.
type routeChoice int

const (
	routeClean     routeChoice = iota // the default path
	routeError                        // Route fails (a purge asked of a dead service)
	routeBadURL                       // Route returns a base URL no request can be built on
	routeCancel                       // the run ends while Route runs (Ctrl-C, deadline)
	routeDoneAfter                    // a clean private path with a teardown
)

// Whatever a router does, at whatever point, the history the driver wrote
// loads, every op's invoke comes before its completion, every op id handed
// out is accounted for, and an op the router failed is a fail that says it
// was not sent.
func TestRun_RouterFailuresAlwaysLeaveALoadableHistory(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if strings.HasSuffix(r.Header.Get("Idempotency-Key"), "1") {
			w.WriteHeader(http.StatusServiceUnavailable) // some intents retry
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "intents")
		choices := rapid.SliceOfN(rapid.IntRange(int(routeClean), int(routeDoneAfter)), 1, 30).Draw(rt, "choices")
		in := intents(n, "t1")
		for i := range in {
			if rapid.Bool().Draw(rt, fmt.Sprintf("clicks%d", i)) {
				in[i].Clicks = 2
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var failed sync.Map // op → true: ops the router kept from being sent
		router := routeFunc(func(ctx context.Context, a driver.AttemptInfo) (driver.Route, error) {
			c := routeClean
			if i := int(a.Op) - 1; i < len(choices) {
				c = routeChoice(choices[i])
			}
			switch c {
			case routeError:
				failed.Store(a.Op, true)
				return driver.Route{}, errors.New("purge: connection refused")
			case routeBadURL:
				failed.Store(a.Op, true)
				return driver.Route{BaseURL: "http://%zz"}, nil
			case routeCancel:
				failed.Store(a.Op, true)
				cancel()
				<-ctx.Done()
				return driver.Route{}, ctx.Err()
			case routeDoneAfter:
				return driver.Route{BaseURL: srv.URL, Fresh: true, Done: func() {}}, nil
			}
			return driver.Route{}, nil
		})
		var buf bytes.Buffer
		rec, err := driver.NewRecorder(history.NewWriter(&buf), "prop", 1)
		if err != nil {
			rt.Fatal(err)
		}
		cfg := driver.Config{BaseURL: srv.URL, Recorder: rec, Router: router, Concurrency: 3,
			Retry: driver.RetryPolicy{MaxAttempts: 3, Base: time.Microsecond, Max: time.Microsecond}}
		if _, err := driver.Run(ctx, cfg, in); err != nil {
			rt.Fatal(err)
		}
		h, err := history.Load(bytes.NewReader(buf.Bytes()), history.LoadOptions{})
		if err != nil {
			rt.Fatalf("the history does not load: %v\n%s", err, buf.String())
		}
		if int64(len(h.Attempts)) != rec.Ops() {
			rt.Fatalf("%d op ids handed out, %d attempts in the history", rec.Ops(), len(h.Attempts))
		}
		for _, a := range h.Attempts {
			if a.Done() && a.Complete < a.Invoke {
				rt.Fatalf("op %d completes at %d before its invoke at %d", a.Op, a.Complete, a.Invoke)
			}
			if _, notSent := failed.Load(a.Op); notSent && (a.Outcome != history.Fail || !strings.HasPrefix(a.Error, "not sent: ")) {
				rt.Fatalf("op %d was never sent but is %v %q", a.Op, a.Outcome, a.Error)
			}
		}
	})
}

// A routing error is the harness's, not the client's: the intent retries.
func TestRun_RoutingErrorDoesNotEndTheIntent(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer srv.Close()
	router := routeFunc(func(_ context.Context, a driver.AttemptInfo) (driver.Route, error) {
		if a.Attempt == 1 {
			return driver.Route{}, errors.New("purge: connection refused")
		}
		return driver.Route{}, nil
	})
	h, _ := run(t, driver.Config{BaseURL: srv.URL, Router: router, Retry: driver.RetryPolicy{Base: time.Millisecond}}, intents(1, "t1"))
	if len(h.Attempts) != 2 || h.Attempts[0].Outcome != history.Fail || h.Attempts[1].Status != 201 {
		t.Fatalf("got %+v, want a not-sent fail then a 201", h.Attempts)
	}
}

// A path no request can be built on is refused before anything is sent.
func TestRun_UnbuildablePathIsAConfigError(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	defer srv.Close()
	in := intents(2, "t1")
	in[1].Path = "/orders%zz"
	var buf bytes.Buffer
	rec, _ := driver.NewRecorder(history.NewWriter(&buf), "bad", 1)
	_, err := driver.Run(context.Background(), driver.Config{BaseURL: srv.URL, Recorder: rec}, in)
	if !errors.Is(err, driver.ErrConfig) || !strings.Contains(err.Error(), "/orders%zz") || served.Load() != 0 {
		t.Fatalf("err %v, %d served; want a config error naming the path and nothing sent", err, served.Load())
	}
}
