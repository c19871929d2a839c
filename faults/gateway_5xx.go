package faults

import (
	"context"
	"fmt"
	"net/http"
)

func init() { Register("gateway-5xx", func() Fault { return &Gateway5xx{} }) }

// Gateway5xx is a gateway hop that forwards the aimed attempt to the service,
// waits for the real response, throws it away and answers 502 or 504 (or
// 500: the service's own error after its work committed, as a framework's
// failing middleware answers): the request executed, the client was told
// it failed.
type Gateway5xx struct {
	// Status is 500, 502 or 504 (default 504).
	Status int `yaml:"status" json:"status" jsonschema:"enum=500,enum=502,enum=504"`
	hop    hop
	_      struct{}
}

var _ Aimed = (*Gateway5xx)(nil)

// Kind implements [Fault].
func (*Gateway5xx) Kind() string { return "gateway-5xx" }

// Validate implements [Fault].
func (f *Gateway5xx) Validate() error {
	switch f.Status {
	case 0:
		f.Status = http.StatusGatewayTimeout
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
	default:
		return invalid(f.Kind(), "status must be 500, 502 or 504, got %d", f.Status)
	}
	return nil
}

// Apply implements [Fault]; the gateway acts through Route.
func (*Gateway5xx) Apply(context.Context, World) error { return nil }

// Heal implements [Fault]: it stops the hop.
func (f *Gateway5xx) Heal(ctx context.Context, _ World) error { return f.hop.close(ctx) }

// Route implements [Aimed].
func (f *Gateway5xx) Route(ctx context.Context, w World, a Attempt) (Route, error) {
	base := w.ServiceURL()
	url, err := f.hop.start(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		status := f.Status
		if _, err := forward(r, base); err != nil {
			status = http.StatusBadGateway
		}
		rw.Header().Set("Content-Type", "text/plain")
		rw.WriteHeader(status)
		fmt.Fprintf(rw, "%d from the gateway (idemchaos gateway-5xx)\n", status)
	}))
	if err != nil {
		return Route{}, err
	}
	w.Record(f.Kind(), "fire", a.Op, map[string]any{"status": f.Status})
	return Route{BaseURL: url, Fresh: true}, nil
}

// ClientAnswer implements [ClientPath]: on a client's path the attempt is
// forwarded, executes, and the upstream's answer is replaced by the
// gateway's plain-text 502 or 504.
func (f *Gateway5xx) ClientAnswer() Answer {
	return Answer{Forward: true, Status: f.Status, Headers: map[string]string{"Content-Type": "text/plain"},
		Body: fmt.Sprintf("%d from the gateway (idemchaos gateway-5xx)\n", f.Status)}
}
