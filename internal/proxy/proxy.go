package proxy

import (
	"context"
	"encoding/json"
)

// Stream is the direction a toxic acts on.
type Stream string

const (
	// Upstream is client → server traffic (requests).
	Upstream Stream = "upstream"
	// Downstream is server → client traffic (responses). A limit_data toxic
	// with bytes=0 here lets the server execute a request while the client
	// sees EOF: the response-drop fault.
	Downstream Stream = "downstream"
)

// Toxic is one Toxiproxy toxic. Its toxicity is always 1 (see the package
// doc).
type Toxic struct {
	// Name identifies the toxic within its proxy. Empty means
	// "<type>_<stream>", Toxiproxy's default.
	Name string
	// Type is a Toxiproxy toxic type: latency, bandwidth, slow_close,
	// timeout, reset_peer, slicer, limit_data.
	Type string
	// Stream is the direction; empty means [Downstream].
	Stream Stream
	// Attributes are the type's parameters, e.g. {"latency": 100} (ms) or
	// {"bytes": 0}.
	Attributes map[string]any

	_ struct{}
}

// Server is a Toxiproxy instance. Both implementations are safe for
// concurrent use.
type Server interface {
	// CreateProxy creates and starts a proxy that forwards listen to
	// upstream and returns the address it really listens on. An empty
	// listen means 127.0.0.1 on a free port.
	CreateProxy(ctx context.Context, name, listen, upstream string) (string, error)
	// AddToxic adds t to the named proxy. It applies to every connection,
	// current and future.
	AddToxic(ctx context.Context, proxy string, t Toxic) error
	// RemoveToxic removes one toxic from the named proxy.
	RemoveToxic(ctx context.Context, proxy, toxic string) error
	// ResetToxics removes every toxic from the named proxy.
	ResetToxics(ctx context.Context, proxy string) error
	// SetEnabled stops (false: closes its listener and every connection) or
	// restarts (true) the named proxy.
	SetEnabled(ctx context.Context, proxy string, enabled bool) error
	// RemoveProxy stops the named proxy and forgets it.
	RemoveProxy(ctx context.Context, name string) error
	// Close removes every proxy this Server created; an in-process server
	// stops listening entirely.
	Close(ctx context.Context) error
}

// toxicJSON is the API's wire form of a toxic.
type toxicJSON struct {
	Name       string         `json:"name,omitempty"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// wire returns t as the API expects it, defaults filled in.
func (t Toxic) wire() toxicJSON {
	stream := t.Stream
	if stream == "" {
		stream = Downstream
	}
	attrs := t.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	return toxicJSON{Name: t.Name, Type: t.Type, Stream: string(stream), Toxicity: 1, Attributes: attrs}
}

// marshal encodes t for the API.
func (t Toxic) marshal() ([]byte, error) { return json.Marshal(t.wire()) }

// defaultListen is where a proxy listens when the caller does not say.
const defaultListen = "127.0.0.1:0"
