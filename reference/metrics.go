package reference

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics is one server's Prometheus registry. It is per server (not the
// global registry) so several services can run in one process (tests).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	purged   prometheus.Counter
	inFlight prometheus.Gauge
}

// InFlightMetric is the gauge of requests the service is handling right
// now, on GET /metrics: the harness reads it to see a timed-out attempt's
// work end before it reads the effects, instead of waiting a fixed time.
const InFlightMetric = "idemchaos_reference_requests_in_flight"

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemchaos_reference_requests_total",
			Help: "Requests by route and outcome (executed, replayed, conflict, rejected, error).",
		}, []string{"route", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "idemchaos_reference_request_duration_seconds",
			Help:    "Request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"route"}),
		purged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "idemchaos_reference_purged_records_total",
			Help: "Idempotency records deleted by the retention purge.",
		}),
	}
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: InFlightMetric,
		Help: "Requests being handled now (a client that timed out does not end its request's work).",
	})
	m.reg.MustRegister(m.requests, m.duration, m.purged, m.inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(route, outcome string, d time.Duration) {
	m.requests.WithLabelValues(route, outcome).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
