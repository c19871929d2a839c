package driver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
)

// BenchmarkRun measures the driver's own cost: a trivial handler, sixteen
// clients, every attempt recorded to a history file.
func BenchmarkRun(b *testing.B) {
	body := []byte(`{"id":"ord_0123456789","tenant":"t1","sku":"A-100","qty":2,"amount":1200,"state":"pending"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	}))
	defer srv.Close()
	const n = 5000
	in := make([]driver.Intent, n)
	for i := range in {
		in[i] = driver.Intent{ID: fmt.Sprintf("i%d", i), Tenant: "t1", Key: fmt.Sprintf("k%d", i), Method: "POST", Path: "/v1/orders",
			Body: []byte(`{"sku":"A-100","qty":2,"amount":1200}`)}
	}
	f, err := os.Create(filepath.Join(b.TempDir(), "h.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ResetTimer()
	for b.Loop() {
		rec, _ := driver.NewRecorder(history.NewWriter(f), "bench", 1)
		if _, err := driver.Run(context.Background(), driver.Config{BaseURL: srv.URL, Tokens: map[string]string{"t1": "tok-t1"},
			Headers: map[string]string{"Content-Type": "application/json"}, Concurrency: 16, MaxRequests: n, Recorder: rec}, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "req/s")
}
