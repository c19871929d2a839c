package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// external drives a toxiproxy-server through its HTTP API.
type external struct {
	client *toxiclient.Client
	url    string

	mu      sync.Mutex
	closed  bool
	created map[string]bool // proxies this Server made, removed on Close
}

var _ Server = (*external)(nil)

// Connect returns a [Server] for the toxiproxy-server whose API is at url
// (e.g. http://127.0.0.1:8474). It checks that the server answers and
// returns [ErrUnreachable] if not.
func Connect(ctx context.Context, url string) (Server, error) {
	s := &external{client: toxiclient.NewClient(url), url: url, created: map[string]bool{}}
	err := call(ctx, func() error {
		_, err := s.client.Proxies()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("connect to toxiproxy at %s: %w: %w", url, ErrUnreachable, err)
	}
	return s, nil
}

// call runs fn, which cannot be cancelled (the client package takes no
// context), and returns early with ctx's error if ctx ends first.
func call(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mapClientErr classifies the client package's errors. It wraps the API's
// error with %v, so the HTTP status in the text is all there is to go on.
func mapClientErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "HTTP 409") && strings.Contains(msg, "toxic"):
		return fmt.Errorf("%w: %w", ErrToxicExists, err)
	case strings.Contains(msg, "HTTP 409"):
		return fmt.Errorf("%w: %w", ErrProxyExists, err)
	case strings.Contains(msg, "HTTP 404") && strings.Contains(msg, "toxic not found"):
		return fmt.Errorf("%w: %w", ErrToxicNotFound, err)
	case strings.Contains(msg, "HTTP 404"):
		return fmt.Errorf("%w: %w", ErrProxyNotFound, err)
	case strings.Contains(msg, "HTTP 400"):
		return fmt.Errorf("%w: %w", ErrBadToxic, err)
	}
	return err
}

// check fails once the server is closed.
func (s *external) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// CreateProxy implements [Server].
func (s *external) CreateProxy(ctx context.Context, name, listen, upstream string) (string, error) {
	if err := s.check(); err != nil {
		return "", fmt.Errorf("create proxy %s: %w", name, err)
	}
	if listen == "" {
		listen = defaultListen
	}
	var addr string
	err := call(ctx, func() error {
		p, err := s.client.CreateProxy(name, listen, upstream)
		if err != nil {
			return err
		}
		addr = p.Listen
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("create proxy %s: %w", name, mapClientErr(err))
	}
	s.mu.Lock()
	s.created[name] = true
	s.mu.Unlock()
	return addr, nil
}

// proxy fetches a proxy handle by name.
func (s *external) proxy(ctx context.Context, name string) (*toxiclient.Proxy, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var p *toxiclient.Proxy
	err := call(ctx, func() error {
		var err error
		p, err = s.client.Proxy(name)
		return err
	})
	if err != nil {
		return nil, mapClientErr(err)
	}
	return p, nil
}

// AddToxic implements [Server].
func (s *external) AddToxic(ctx context.Context, proxy string, t Toxic) error {
	p, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("add toxic to %s: %w", proxy, err)
	}
	w := t.wire()
	err = call(ctx, func() error {
		_, err := p.AddToxic(w.Name, w.Type, w.Stream, w.Toxicity, toxiclient.Attributes(w.Attributes))
		return err
	})
	if err != nil {
		return fmt.Errorf("add toxic to %s: %w", proxy, mapClientErr(err))
	}
	return nil
}

// RemoveToxic implements [Server].
func (s *external) RemoveToxic(ctx context.Context, proxy, toxic string) error {
	p, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("remove toxic %s from %s: %w", toxic, proxy, err)
	}
	if err := call(ctx, func() error { return p.RemoveToxic(toxic) }); err != nil {
		return fmt.Errorf("remove toxic %s from %s: %w", toxic, proxy, mapClientErr(err))
	}
	return nil
}

// ResetToxics implements [Server].
func (s *external) ResetToxics(ctx context.Context, proxy string) error {
	p, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("reset toxics of %s: %w", proxy, err)
	}
	var errs []error
	for _, t := range p.ActiveToxics {
		if err := call(ctx, func() error { return p.RemoveToxic(t.Name) }); err != nil {
			errs = append(errs, mapClientErr(err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reset toxics of %s: %w", proxy, err)
	}
	return nil
}

// SetEnabled implements [Server].
func (s *external) SetEnabled(ctx context.Context, proxy string, enabled bool) error {
	p, err := s.proxy(ctx, proxy)
	if err != nil {
		return fmt.Errorf("set %s enabled=%t: %w", proxy, enabled, err)
	}
	err = call(ctx, func() error {
		if enabled {
			return p.Enable()
		}
		return p.Disable()
	})
	if err != nil {
		return fmt.Errorf("set %s enabled=%t: %w", proxy, enabled, mapClientErr(err))
	}
	return nil
}

// RemoveProxy implements [Server].
func (s *external) RemoveProxy(ctx context.Context, name string) error {
	p, err := s.proxy(ctx, name)
	if err != nil {
		return fmt.Errorf("remove proxy %s: %w", name, err)
	}
	if err := call(ctx, p.Delete); err != nil {
		return fmt.Errorf("remove proxy %s: %w", name, mapClientErr(err))
	}
	s.mu.Lock()
	delete(s.created, name)
	s.mu.Unlock()
	return nil
}

// Close implements [Server]: it removes the proxies this Server created and
// leaves the rest of the external server alone.
func (s *external) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	names := make([]string, 0, len(s.created))
	for n := range s.created {
		names = append(names, n)
	}
	s.mu.Unlock()
	var errs []error
	for _, n := range names {
		if err := s.RemoveProxy(ctx, n); err != nil && !errors.Is(err, ErrProxyNotFound) {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return errors.Join(errs...)
}
