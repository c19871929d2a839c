package faults

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

func init() { Register("duplicate-delivery", func() Fault { return &DuplicateDelivery{} }) }

// DuplicateDelivery delivers an aimed attempt's request bytes upstream more
// than once, as a load balancer that retries on its own or a queue that
// redelivers does: the service receives the same request (same key, same
// body) several times at once, and the client sees the answer to the first
// copy only. A service whose claim on the key is not atomic executes twice.
//
// The attempt goes through a one-request proxy of the fault's own (Toxiproxy
// has no toxic that duplicates); its upstream is the service itself.
type DuplicateDelivery struct {
	// Copies is how many times the request reaches the service (default 2).
	Copies int `yaml:"copies" json:"copies" jsonschema:"minimum=2,maximum=10"`
	// Gap is the delay between one copy and the next (default 0: all at
	// once, the tightest race).
	Gap time.Duration `yaml:"gap" json:"gap"`
	_   struct{}
}

var _ Aimed = (*DuplicateDelivery)(nil)

// Kind implements [Fault].
func (*DuplicateDelivery) Kind() string { return "duplicate-delivery" }

// Validate implements [Fault].
func (f *DuplicateDelivery) Validate() error {
	if f.Copies == 0 {
		f.Copies = 2
	}
	if f.Copies < 2 || f.Copies > 10 {
		return invalid(f.Kind(), "copies must be 2 to 10, got %d", f.Copies)
	}
	if f.Gap < 0 || f.Gap > 10*time.Second {
		return invalid(f.Kind(), "gap must be 0 to 10s, got %s", f.Gap)
	}
	return nil
}

// Apply implements [Fault]; it acts through Route.
func (*DuplicateDelivery) Apply(context.Context, World) error { return nil }

// Heal implements [Fault].
func (*DuplicateDelivery) Heal(context.Context, World) error { return nil }

// dupWait bounds how long the extra copies may take once the client has its
// answer: their effects must land before the run reads them, but a service
// that hangs on a copy must not hang the run.
const dupWait = 10 * time.Second

// Route implements [Aimed]: the attempt goes to a proxy that accepts its one
// connection, reads the request, sends its bytes upstream Copies times and
// answers with the first copy's response. Done waits for the other copies'
// responses (bounded), so their effects are in place when the run ends.
func (f *DuplicateDelivery) Route(ctx context.Context, w World, a Attempt) (Route, error) {
	u, err := url.Parse(w.ServiceURL())
	if err != nil {
		return Route{}, err
	}
	if u.Scheme != "http" {
		return Route{}, fmt.Errorf("%w: %s duplicates plain HTTP only, not %s", ErrUnsupported, f.Kind(), u.Scheme)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return Route{}, err
	}
	d := &duplicator{upstream: u.Host, copies: f.Copies, gap: f.Gap, done: make(chan struct{})}
	go d.serve(ln, func(n int) {
		w.Record(f.Kind(), "fire", a.Op, map[string]any{"copies": n, "gap_ms": f.Gap.Milliseconds()})
	})
	return Route{BaseURL: "http://" + ln.Addr().String(), Fresh: true, Done: func() {
		_ = ln.Close()
		select {
		case <-d.done:
		case <-time.After(dupWait):
		}
		d.closeAll()
	}}, nil
}

// duplicator is the one-request proxy of a duplicate delivery.
type duplicator struct {
	upstream string
	copies   int
	gap      time.Duration
	done     chan struct{} // closed when every copy was answered or failed

	mu    sync.Mutex
	conns []net.Conn
}

func (d *duplicator) track(c net.Conn) {
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
}

func (d *duplicator) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		_ = c.Close()
	}
}

func (d *duplicator) serve(ln net.Listener, fired func(copies int)) {
	defer close(d.done)
	client, err := ln.Accept()
	_ = ln.Close()
	if err != nil {
		return
	}
	d.track(client)
	_ = client.SetDeadline(time.Now().Add(dupWait + time.Minute))
	raw, req, err := readRaw(client)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	first := make(chan []byte, 1)
	for i := 0; i < d.copies; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := d.deliver(raw, req, time.Duration(i)*d.gap)
			if i == 0 {
				if err != nil {
					resp = nil
				}
				first <- resp
			}
		}()
	}
	fired(d.copies)
	if resp := <-first; resp != nil {
		_, _ = client.Write(resp)
	}
	_ = client.Close() // the client has its answer (or an EOF for none)
	wg.Wait()
}

// deliver sends the request bytes on a connection of their own after
// delay and returns the raw response.
func (d *duplicator) deliver(raw []byte, req *http.Request, delay time.Duration) ([]byte, error) {
	if delay > 0 {
		time.Sleep(delay) // bounded by Validate (≤ 10s × copies); nothing to wait for but time
	}
	c, err := net.DialTimeout("tcp", d.upstream, 5*time.Second)
	if err != nil {
		return nil, err
	}
	d.track(c)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(dupWait + time.Minute))
	if _, err := c.Write(raw); err != nil {
		return nil, err
	}
	var got bytes.Buffer
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(c, &got)), req)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	return got.Bytes(), nil
}

// readRaw reads one request from c and returns its exact bytes: what the
// client sent is what every copy carries.
func readRaw(c net.Conn) ([]byte, *http.Request, error) {
	var raw bytes.Buffer
	req, err := http.ReadRequest(bufio.NewReader(io.TeeReader(c, &raw)))
	if err != nil {
		return nil, nil, err
	}
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return nil, nil, err
	}
	req.Body.Close()
	if raw.Len() == 0 {
		return nil, nil, errors.New("empty request")
	}
	return raw.Bytes(), req, nil
}
