package kiosk

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve serves h on ln with workers workers, each taking one connection off
// ln only when it is free and closing it after one request: the kiosk's
// worker pool. Connections beyond the workers wait in the listen backlog,
// and beyond the backlog the kernel drops them. It returns when ctx ends
// (after the requests in flight) or ln fails.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, workers int) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	srv.SetKeepAlivesEnabled(false)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	err := srv.Serve(&pooled{Listener: ln, free: make(chan struct{}, max(workers, 1))})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// pooled accepts a connection only when a worker is free; the worker is
// free again once the connection is closed.
type pooled struct {
	net.Listener
	free chan struct{}
}

func (p *pooled) Accept() (net.Conn, error) {
	p.free <- struct{}{} // wait for a worker
	c, err := p.Listener.Accept()
	if err != nil {
		<-p.free
		return nil, err
	}
	return &workerConn{Conn: c, done: func() { <-p.free }}, nil
}

// workerConn frees its worker when closed, once.
type workerConn struct {
	net.Conn
	once sync.Once
	done func()
}

func (c *workerConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.done)
	return err
}
