package harness

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// BenchmarkClientPath measures what the per-intent fault proxy adds to an
// attempt: the same POST straight to an upstream and through an intent's
// listener (recorded to a discarded history). go test -bench ClientPath
// -run '^$' ./harness/ prints both; the ratio is the figure of issue 24.
func BenchmarkClientPath(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"ord_1"}`)
	}))
	defer up.Close()
	rec := driver.NewRecorderAt(history.NewWriter(io.Discard), time.Now())
	cp := &clientPath{rec: rec, upstream: up.URL, transport: &http.Transport{}, begun: time.Now(),
		keyHeader: "Idempotency-Key", named: map[[2]string]string{}, pick: func([]byte) (string, bool) { return "", false }}
	in := &driver.Intent{ID: "i1", Tenant: "t1"}
	l, err := cp.open(context.Background(), addrgate.Loopback(), in)
	if err != nil {
		b.Fatal(err)
	}
	defer l.close()
	client := &http.Client{Transport: &http.Transport{}}
	post := func(b *testing.B, base string) {
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/orders", strings.NewReader(`{"sku":"A-100","qty":1,"amount":100}`))
			req.Header.Set("Idempotency-Key", "k1")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("direct", func(b *testing.B) { post(b, up.URL) })
	b.Run("proxied", func(b *testing.B) { post(b, "http://"+l.addr) })
}
