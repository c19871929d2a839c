//go:build unix

package kiosk_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/examples/foreign/kiosk"
)

// These tests pin the kiosk's behaviour by hand, without idemchaos: its
// own clients (plain net/http, 2s timeout, a new connection per order as
// the kiosks have) in a morning's rush.

// rush sends 36 kiosks' orders at once, two each, to a kiosk service with
// the given listen backlog, and counts the orders the service made and the
// kiosks' requests that got no answer within their timeout.
func rush(t *testing.T, backlog int) (made, answered, timedOut int) {
	t.Helper()
	ln, err := kiosk.Listen("127.0.0.1:0", backlog)
	if err != nil {
		t.Fatal(err)
	}
	var orders atomic.Int64
	h := kiosk.New(kiosk.Options{})
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			orders.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- kiosk.Serve(ctx, ln, counted, 4) }()
	t.Cleanup(func() { stop(); <-served })
	url := "http://" + ln.Addr().String() + "/orders"

	var mu sync.Mutex
	var wg sync.WaitGroup
	for k := range 36 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			for n := range 2 {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"sku":"A-100","qty":1,"amount":100}`))
				req.Header.Set("Idempotency-Key", fmt.Sprintf("k%d-%d", k, n))
				req.Header.Set("X-Store", "t1")
				resp, err := client.Do(req)
				mu.Lock()
				switch {
				case err == nil:
					answered++
					_ = resp.Body.Close()
				case isTimeout(err):
					timedOut++
				default:
					t.Errorf("kiosk %d: %v", k, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return int(orders.Load()), answered, timedOut
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// With the normal backlog every kiosk is answered in time; with a backlog
// of 1 some wait longer than 2s — the kernel retries the dropped
// handshakes after 1s, then 3s — and those requests never reached the
// service (it made no order for them while they waited).
func TestKiosk_SmallBacklogLeavesKiosksWaiting(t *testing.T) {
	made, answered, timedOut := rush(t, 4096)
	if timedOut != 0 || answered != 72 || made != 72 {
		t.Errorf("backlog 4096: %d answered, %d timed out, %d orders made; want all 72 answered", answered, timedOut, made)
	}
	made, answered, timedOut = rush(t, 1)
	t.Logf("backlog 1: %d answered, %d timed out, %d requests reached the service", answered, timedOut, made)
	if timedOut == 0 {
		t.Errorf("backlog 1: every kiosk was answered within 2s (%d)", answered)
	}
	if made > answered+timedOut {
		t.Errorf("backlog 1: %d requests reached the service, more than were sent", made)
	}
}
