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
// the harness calls the proxy collection directly.
type inProcess struct {
	api *toxiproxy.ApiServer
	// up reads the server's log to tell which clients reached upstream.
	up *upstreamLog

	mu     sync.Mutex
	closed bool
}

var (
	_ Server           = (*inProcess)(nil)
	_ UpstreamReporter = (*inProcess)(nil)
)

// NewInProcess returns a Toxiproxy that runs inside this process. Its log
// is read, not printed: the per-connection events tell which clients the
// proxy connected upstream (see [UpstreamReporter]).
func NewInProcess() Server {
	metrics := toxiproxy.NewMetricsContainer(prometheus.NewRegistry())
	up := newUpstreamLog()
	return &inProcess{api: toxiproxy.NewServer(metrics, zerolog.New(up).Level(zerolog.DebugLevel)), up: up}
}

// Upstream implements [UpstreamReporter].
func (s *inProcess) Upstream(local, remote string, dialed time.Time) string {
	return s.up.Upstream(local, remote, dialed)
}

// check fails once the server is closed.
func (s *inProcess) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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
	case errors.Is(err, toxiproxy.ErrProxyAlreadyExists):
		return ErrProxyExists
	case errors.Is(err, toxiproxy.ErrProxyNotFound):
		return ErrProxyNotFound
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
	if err := s.check(ctx); err != nil {
		return "", fmt.Errorf("create proxy %s: %w", name, err)
	}
	if listen == "" {
		listen = defaultListen
	}
	p := toxiproxy.NewProxy(s.api, name, listen, upstream)
	if err := s.api.Collection.Add(p, true); err != nil {
		return "", fmt.Errorf("create proxy %s: %w", name, mapErr(err))
	}
	p.Lock()
	defer p.Unlock()
	s.up.listening(name, p.Listen)
	return p.Listen, nil
}

// proxy finds a proxy by name.
func (s *inProcess) proxy(ctx context.Context, name string) (*toxiproxy.Proxy, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	p, err := s.api.Collection.Get(name)
	if err != nil {
		return nil, mapErr(err)
	}
	return p, nil
}

// AddToxic implements [Server].
func (s *inProcess) AddToxic(ctx context.Context, proxy string, t Toxic) error {
	p, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("add toxic to %s: %w", proxy, err)
	}
	body, err := t.marshal()
	if err != nil {
		return fmt.Errorf("add toxic to %s: %w: %w", proxy, ErrBadToxic, err)
	}
	if _, err := p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("add toxic to %s: %w", proxy, mapErr(err))
	}
	return nil
}

// RemoveToxic implements [Server].
func (s *inProcess) RemoveToxic(ctx context.Context, proxy, toxic string) error {
	p, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("remove toxic %s from %s: %w", toxic, proxy, err)
	}
	if err := p.Toxics.RemoveToxic(ctx, toxic); err != nil {
		return fmt.Errorf("remove toxic %s from %s: %w", toxic, proxy, mapErr(err))
	}
	return nil
}

// ResetToxics implements [Server].
func (s *inProcess) ResetToxics(ctx context.Context, proxy string) error {
	p, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("reset toxics of %s: %w", proxy, err)
	}
	p.Toxics.ResetToxics(ctx)
	return nil
}

// SetEnabled implements [Server].
func (s *inProcess) SetEnabled(ctx context.Context, proxy string, enabled bool) error {
	p, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("set %s enabled=%t: %w", proxy, enabled, err)
	}
	if !enabled {
		p.Stop()
		return nil
	}
	if err := p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return fmt.Errorf("enable %s: %w", proxy, err)
	}
	return nil
}

// RemoveProxy implements [Server].
func (s *inProcess) RemoveProxy(ctx context.Context, name string) error {
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("remove proxy %s: %w", name, err)
	}
	if err := s.api.Collection.Remove(name); err != nil {
		return fmt.Errorf("remove proxy %s: %w", name, mapErr(err))
	}
	return nil
}

// Close implements [Server].
func (s *inProcess) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if err := s.api.Collection.Clear(); err != nil {
		return fmt.Errorf("close proxies: %w", err)
	}
	return nil
}
