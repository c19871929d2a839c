package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// inProcess is a Toxiproxy running inside this process. It has no HTTP API:
// the harness calls each proxy's toxic collection directly.
//
// Toxiproxy's own accept loop (Proxy.server) dials the upstream inside the
// loop, with no timeout: in front of a service whose listen backlog is
// full, one connect waits on the kernel's SYN retries and every client
// behind it waits unaccepted, so a service that is merely slow to accept
// answers nothing through the proxy at all. Each proxy here therefore has
// an accept loop of this package's ([front]) that takes every client at
// once and connects it upstream on its own; the connection pair then runs
// through Toxiproxy's own links and toxics (ToxicCollection.StartLink),
// so the faults are the library's.
type inProcess struct {
	api *toxiproxy.ApiServer
	// up is what became of each client's upstream connect.
	up *upstreams
	// timeout bounds each proxy's upstream connects ([connectTimeout]).
	timeout time.Duration

	mu      sync.Mutex
	closed  bool
	proxies map[string]*front
}

var (
	_ Server           = (*inProcess)(nil)
	_ UpstreamReporter = (*inProcess)(nil)
)

// NewInProcess returns a Toxiproxy that runs inside this process; it tells
// which clients it could not connect to the service (see
// [UpstreamReporter]).
func NewInProcess() Server {
	metrics := toxiproxy.NewMetricsContainer(prometheus.NewRegistry())
	return &inProcess{api: toxiproxy.NewServer(metrics, zerolog.Nop()), up: newUpstreams(),
		timeout: connectTimeout, proxies: map[string]*front{}}
}

// Upstream implements [UpstreamReporter]. Every client is accepted at
// once, so what it was dialled at does not matter.
func (s *inProcess) Upstream(local, remote string, _ time.Time) string {
	return s.up.reason(local, remote)
}

// check fails once the server is closed. Callers hold s.mu.
func (s *inProcess) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed {
		return ErrClosed
	}
	return nil
}

// mapErr turns toxiproxy's API errors into this package's sentinels.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, toxiproxy.ErrToxicAlreadyExists):
		return ErrToxicExists
	case errors.Is(err, toxiproxy.ErrToxicNotFound):
		return ErrToxicNotFound
	}
	var apiErr *toxiproxy.ApiError
	if errors.As(err, &apiErr) && apiErr.StatusCode == 400 {
		return fmt.Errorf("%w: %s", ErrBadToxic, apiErr.Message)
	}
	return err
}

// CreateProxy implements [Server].
func (s *inProcess) CreateProxy(ctx context.Context, name, listen, upstream string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return "", fmt.Errorf("create proxy %s: %w", name, err)
	}
	if _, ok := s.proxies[name]; ok {
		return "", fmt.Errorf("create proxy %s: %w", name, ErrProxyExists)
	}
	if listen == "" {
		listen = defaultListen
	}
	f := newFront(s.api, name, listen, upstream, s.up, s.timeout)
	if err := f.start(); err != nil {
		return "", fmt.Errorf("create proxy %s: %w", name, err)
	}
	s.proxies[name] = f
	return f.addr(), nil
}

// proxy finds a proxy by name.
func (s *inProcess) proxy(ctx context.Context, name string) (*front, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	f, ok := s.proxies[name]
	if !ok {
		return nil, ErrProxyNotFound
	}
	return f, nil
}

// AddToxic implements [Server].
func (s *inProcess) AddToxic(ctx context.Context, proxy string, t Toxic) error {
	f, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("add toxic to %s: %w", proxy, err)
	}
	body, err := t.marshal()
	if err != nil {
		return fmt.Errorf("add toxic to %s: %w: %w", proxy, ErrBadToxic, err)
	}
	if _, err := f.p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("add toxic to %s: %w", proxy, mapErr(err))
	}
	return nil
}

// RemoveToxic implements [Server].
func (s *inProcess) RemoveToxic(ctx context.Context, proxy, toxic string) error {
	f, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("remove toxic %s from %s: %w", toxic, proxy, err)
	}
	if err := f.p.Toxics.RemoveToxic(ctx, toxic); err != nil {
		return fmt.Errorf("remove toxic %s from %s: %w", toxic, proxy, mapErr(err))
	}
	return nil
}

// ResetToxics implements [Server].
func (s *inProcess) ResetToxics(ctx context.Context, proxy string) error {
	f, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("reset toxics of %s: %w", proxy, err)
	}
	f.p.Toxics.ResetToxics(ctx)
	return nil
}

// SetEnabled implements [Server].
func (s *inProcess) SetEnabled(ctx context.Context, proxy string, enabled bool) error {
	f, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("set %s enabled=%t: %w", proxy, enabled, err)
	}
	if !enabled {
		f.stop()
		return nil
	}
	if err := f.start(); err != nil {
		return fmt.Errorf("enable %s: %w", proxy, err)
	}
	return nil
}

// RemoveProxy implements [Server].
func (s *inProcess) RemoveProxy(ctx context.Context, name string) error {
	s.mu.Lock()
	if err := s.check(ctx); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("remove proxy %s: %w", name, err)
	}
	f, ok := s.proxies[name]
	delete(s.proxies, name)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("remove proxy %s: %w", name, ErrProxyNotFound)
	}
	f.stop()
	return nil
}

// Close implements [Server].
func (s *inProcess) Close(context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	all := s.proxies
	s.proxies = map[string]*front{}
	s.mu.Unlock()
	for _, f := range all {
		f.stop()
	}
	return nil
}
