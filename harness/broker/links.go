package broker

import (
	"net"
	"sync"
)

// Links is what every broker's consumer-link hop shares: its listeners
// and their accept loops, the connections through it (closed at once when
// the consumers are cut off or the hop closes), the run's ack hook, and
// the hold of new connections while the broker restarts. The hop itself
// reads its protocol. Its zero value is ready; Close ends it.
type Links struct {
	// Hold keeps a consumer reconnecting during a restart waiting for
	// the new broker.
	Hold RestartHold

	mu     sync.Mutex
	lns    []net.Listener
	conns  map[net.Conn]struct{}
	hook   func(Ack) bool
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// Serve accepts connections on ln until it closes, each served by serve
// on a goroutine of its own that Close waits for. A Links already closed
// closes ln.
func (l *Links) Serve(ln net.Listener, serve func(net.Conn)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = ln.Close()
		return
	}
	l.lns = append(l.lns, ln)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				serve(c)
			}()
		}
	}()
}

// Track notes c as a connection through the hop (on) or no longer (off).
func (l *Links) Track(c net.Conn, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns == nil {
		l.conns = map[net.Conn]struct{}{}
	}
	if on {
		l.conns[c] = struct{}{}
	} else {
		delete(l.conns, c)
	}
}

// SetHook sets the run's ack hook (nil: every ack goes on).
func (l *Links) SetHook(f func(Ack) bool) {
	l.mu.Lock()
	l.hook = f
	l.mu.Unlock()
}

// Pass asks the hook whether a goes on to the broker.
func (l *Links) Pass(a Ack) bool {
	l.mu.Lock()
	f := l.hook
	l.mu.Unlock()
	return f == nil || f(a)
}

// Cut closes every connection through the hop: the consumers' deliveries
// go back to the broker, as when they die.
func (l *Links) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		_ = c.Close()
	}
}

// Done is closed once Close has begun: a held connection stops waiting.
func (l *Links) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	return l.done
}

// Close closes the listeners and every connection, and waits for their
// goroutines. It may be called more than once.
func (l *Links) Close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		if l.done == nil {
			l.done = make(chan struct{})
		}
		close(l.done)
	}
	for _, ln := range l.lns {
		_ = ln.Close()
	}
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
