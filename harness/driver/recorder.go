package driver

import (
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// Recorder is the single source of time and op ids in a run, and the one
// writer of its history. It is safe for concurrent use.
type Recorder struct {
	start time.Time
	ops   atomic.Int64
	w     *history.Writer
	mu    sync.Mutex
	// sinks is replaced, never changed, under mu: Write reads it without
	// a lock on every event.
	sinks atomic.Pointer[[]func(*history.Event)]
	// What the fault events so far tell eventually-decided about attempts
	// (see overdue.go): the latest heal, and the ops a fault named. A fault
	// event is stamped and noted under faultMu, so an attempt invoked after
	// a heal was stamped always finds the heal noted.
	faultMu  sync.Mutex
	lastHeal int64
	hit      map[int64]bool
}

// NewRecorder starts the run clock and writes the meta event to w.
func NewRecorder(w *history.Writer, scenario string, seed int64) (*Recorder, error) {
	r := &Recorder{start: time.Now(), w: w}
	err := w.Write(&history.Event{Type: history.TypeMeta, V: history.Version, Scenario: scenario, Seed: seed,
		Started: r.start.UTC().Format(time.RFC3339Nano), EffectsRecorded: true})
	return r, err
}

// NewRecorderAt starts the run clock at start without writing a meta
// event: for a producer that wrote its own at the head of the file.
func NewRecorderAt(w *history.Writer, start time.Time) *Recorder {
	return &Recorder{start: start, w: w}
}

// Now returns the monotonic nanoseconds since the run started.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Start is the wall-clock start of the run.
func (r *Recorder) Start() time.Time { return r.start }

// NextOp returns a fresh attempt id; ids start at 1.
func (r *Recorder) NextOp() int64 { return r.ops.Add(1) }

// Ops returns how many op ids were handed out.
func (r *Recorder) Ops() int64 { return r.ops.Load() }

// OnEvent registers a function called with every event written (for
// progress displays). It must not block, and must read the event at once:
// the driver reuses an event and what it points to once it is written.
func (r *Recorder) OnEvent(f func(*history.Event)) {
	r.mu.Lock()
	var sinks []func(*history.Event)
	if old := r.sinks.Load(); old != nil {
		sinks = slices.Clone(*old)
	}
	sinks = append(sinks, f)
	r.sinks.Store(&sinks)
	r.mu.Unlock()
}

// Write stamps e with the run clock when it has no time yet and appends it.
func (r *Recorder) Write(e *history.Event) error {
	if e.Type == history.TypeFault {
		r.noteFault(e)
	} else if e.NS == 0 && e.Type != history.TypeMeta {
		e.NS = r.Now()
	}
	err := r.w.Write(e)
	if sinks := r.sinks.Load(); sinks != nil {
		for _, f := range *sinks {
			f(e)
		}
	}
	return err
}

// Fault records that a fault fired (action "fire") or healed ("heal"),
// aimed at op (0 for none), with detail marshalled as JSON.
func (r *Recorder) Fault(kind, action string, op int64, detail any) error {
	e := &history.Event{Type: history.TypeFault, Fault: kind, Action: action, Op: op}
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return err
		}
		e.Detail = b
	}
	return r.Write(e)
}

// noteFault stamps a fault event and notes what it says about attempts,
// as eventually-decided reads it: a heal restarts every key's clock, and
// an attempt a fault named is no evidence.
func (r *Recorder) noteFault(e *history.Event) {
	r.faultMu.Lock()
	defer r.faultMu.Unlock()
	if e.NS == 0 {
		e.NS = r.Now()
	}
	if e.Action == "heal" {
		r.lastHeal = max(r.lastHeal, e.NS)
	}
	if e.Op != 0 {
		if r.hit == nil {
			r.hit = map[int64]bool{}
		}
		r.hit[e.Op] = true
	}
}

// evidence says whether an attempt (op, invoked at) counts for
// eventually-decided were the key asked no more: sent at or after the
// latest heal, and named by no fault.
func (r *Recorder) evidence(op, invoked int64) bool {
	r.faultMu.Lock()
	defer r.faultMu.Unlock()
	return invoked >= r.lastHeal && !r.hit[op]
}

// Effect records one effect the system produced.
func (r *Recorder) Effect(tenant, key, intent, effect, kind string) error {
	return r.RecordEffect(history.Effect{Tenant: tenant, Key: key, Intent: intent, ID: effect, Kind: kind})
}

// RecordEffect records one effect an oracle read, with the state of its
// resource and when it was written when the oracle read them.
func (r *Recorder) RecordEffect(e history.Effect) error {
	return r.Write(&history.Event{Type: history.TypeEffect, Tenant: e.Tenant, Key: e.Key, Intent: e.Intent, Effect: e.ID, Kind: e.Kind,
		Resource: e.Resource, State: e.State, WrittenAt: e.WrittenAt})
}

// Interrupted records that the run was cut short, and why: the history is
// partial, and checks of it say unknown.
func (r *Recorder) Interrupted(why string) error {
	return r.Write(&history.Event{Type: history.TypeInterrupted, Error: why})
}

// Flush pushes buffered events to the file, so an interrupted run keeps them.
func (r *Recorder) Flush() error { return r.w.Flush() }
