package harness

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/proxy"
)

// BenchmarkClientPath measures what the per-intent fault proxy adds to an
// attempt: the same POST straight to an upstream, through an intent's
// listener (recorded to a discarded history), and through the in-process
// Toxiproxy alone. direct, proxied and toxiproxy time each path in a
// sub-benchmark of its own; side-by-side sends one request down each path
// in turn and reports each path's median latency (us/op metrics) and
// issue 24's figure, ratio = (proxied − direct) / (toxiproxy − direct),
// ≤ 1.5× wanted: medians of interleaved requests, so that a load that
// comes and goes on a shared machine hits the three alike (idemchaos
// bench --only clients runs it).
func BenchmarkClientPath(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"ord_1"}`)
	}))
	defer up.Close()
	rec := driver.NewRecorderAt(history.NewWriter(io.Discard), time.Now())
	cp := &clientPath{rec: rec, up: driver.NewForwarder(up.URL, 4, nil), begun: time.Now(),
		keyHeader: "Idempotency-Key", named: map[[2]string]string{}, pick: func([]byte) (string, bool) { return "", false }}
	in := &driver.Intent{ID: "i1", Tenant: "t1"}
	l, err := cp.open(context.Background(), addrgate.Loopback(), in)
	if err != nil {
		b.Fatal(err)
	}
	defer l.close()
	px := proxy.NewInProcess()
	defer px.Close(context.Background())
	toxi, err := px.CreateProxy(context.Background(), "bench-client-path", "", strings.TrimPrefix(up.URL, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{}}
	post := func(b *testing.B, base string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/orders", strings.NewReader(`{"sku":"A-100","qty":1,"amount":100}`))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	paths := []struct{ name, base string }{{"direct", up.URL}, {"proxied", "http://" + l.addr}, {"toxiproxy", "http://" + toxi}}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				post(b, p.base)
			}
		})
	}
	b.Run("side-by-side", func(b *testing.B) {
		lat := make([][]float64, len(paths))
		for b.Loop() {
			for i, p := range paths {
				t := time.Now()
				post(b, p.base)
				lat[i] = append(lat[i], float64(time.Since(t).Nanoseconds())/1000)
			}
		}
		med := make([]float64, len(paths))
		for i := range lat {
			slices.Sort(lat[i])
			med[i] = lat[i][len(lat[i])/2]
			b.ReportMetric(med[i], paths[i].name+"-us/op")
		}
		b.ReportMetric((med[1]-med[0])/(med[2]-med[0]), "ratio")
	})
}
