package driver

import "sync"

// gate releases the copies of a click sent together ([Intent.Together]).
// Each copy is written on its own open connection up to its last byte and
// waits here; once every copy has arrived (or dropped out before it could
// hold: not routed, no connection), the last of them writes every held last
// byte back to back, original first. The service then gets the complete
// copies within microseconds of each other however late the driver's
// goroutines, timers or connections were before: under a loaded machine a
// copy released by a timer can come tens of milliseconds late, after the
// original has finished, and the race it was sent to provoke never happens.
type gate struct {
	mu   sync.Mutex
	left int // copies yet to hold or leave
	held []heldCopy
	// done marks the copies that have held or left.
	done []bool
}

// heldCopy is a copy waiting for its last byte.
type heldCopy struct {
	write func() error
	errc  chan error
}

func newGate(copies int) *gate {
	return &gate{left: copies, held: make([]heldCopy, copies), done: make([]bool, copies)}
}

// hold parks copy click, whose last byte write sends; it returns the write's
// error once the gate opened.
func (g *gate) hold(click int, write func() error) error {
	errc := make(chan error, 1)
	g.mu.Lock()
	g.held[click] = heldCopy{write, errc}
	open := g.arrive(click)
	g.mu.Unlock()
	if open {
		g.open()
	}
	return <-errc
}

// leave says copy click will not hold, unless it already has: the gate
// does not wait for it.
func (g *gate) leave(click int) {
	g.mu.Lock()
	if g.done[click] {
		g.mu.Unlock()
		return
	}
	open := g.arrive(click)
	g.mu.Unlock()
	if open {
		g.open()
	}
}

// arrive counts copy click as no longer awaited, with g.mu held, and says
// whether it was the last one.
func (g *gate) arrive(click int) bool {
	g.done[click] = true
	g.left--
	return g.left == 0
}

// open writes the held last bytes in click order, with nothing else in
// between.
func (g *gate) open() {
	for _, h := range g.held {
		if h.write != nil {
			h.errc <- h.write()
		}
	}
}
