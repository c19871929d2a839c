package faults

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// hop is a small HTTP server on loopback standing between the client and the
// service for aimed attempts: an HTTP-aware gateway, unlike a TCP proxy.
type hop struct {
	mu  sync.Mutex
	srv *http.Server
	url string
}

// start serves h on 127.0.0.1 (once) and returns the hop's base URL.
func (p *hop) start(h http.Handler) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil {
		return p.url, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	p.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	p.url = "http://" + ln.Addr().String()
	go func() { _ = p.srv.Serve(ln) }()
	return p.url, nil
}

func (p *hop) close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv == nil {
		return nil
	}
	err := p.srv.Shutdown(ctx)
	p.srv = nil
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// forward sends r to base and returns the service's real response, read to
// the end, so the service has finished by the time the hop answers.
func forward(r *http.Request, base string) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = "http", base[len("http://"):]
	out.Host = out.URL.Host
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(out)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 32<<10)
	for {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
	}
	resp.Body.Close()
	return resp, nil
}
