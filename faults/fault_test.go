package faults_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/faults"
)

func TestRegistry_HasEveryDesignKind(t *testing.T) {
	t.Parallel()
	want := []string{"consumer-restart", "crash", "double-click", "duplicate-delivery", "gateway-5xx", "latency", "rate-limit",
		"replica-lag", "response-drop", "retention-expiry", "slow-db"}
	want = append(want, "in-flight", "refuse", "reject", "stall", "unavailable")
	sort.Strings(want)
	got := faults.Kinds()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	for _, k := range got {
		a, _ := faults.New(k)
		b, _ := faults.New(k)
		if a == b {
			t.Errorf("%s: New returned the same value twice", k)
		}
		if a.Kind() != k {
			t.Errorf("%s: Kind() = %q", k, a.Kind())
		}
		if err := a.Validate(); err != nil {
			t.Errorf("%s: defaults do not validate: %v", k, err)
		}
	}
	if _, err := faults.New("meteor"); !errors.Is(err, faults.ErrUnknownKind) {
		t.Fatalf("New(meteor) = %v", err)
	}
}

func TestRegister_DuplicatePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("registering crash twice did not panic")
		}
	}()
	faults.Register("crash", func() faults.Fault { return &faults.Crash{} })
}

func TestValidate_RejectsBadParameters(t *testing.T) {
	t.Parallel()
	cases := map[string]faults.Fault{
		"negative bytes":  &faults.ResponseDrop{Bytes: -1},
		"bad stream":      &faults.Latency{},
		"gateway 503":     &faults.Gateway5xx{Status: 503},
		"one copy":        &faults.DoubleClick{Copies: 1},
		"negative spread": &faults.DoubleClick{Spread: -time.Second},
		"unknown point":   &faults.Crash{Point: "whenever"},
		"consumer point":  &faults.ConsumerRestart{Point: "after-claim"},
		"negative delay":  &faults.ReplicaLag{Delay: -time.Second},
		"negative after":  &faults.RetentionExpiry{After: -time.Second},
		"negative retry":  &faults.RateLimit{RetryAfter: -time.Second},
		"negative jitter": &faults.SlowDB{},
	}
	cases["bad stream"].(*faults.Latency).Stream = "sideways"
	cases["negative jitter"].(*faults.SlowDB).Jitter = -1
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			if err := f.Validate(); !errors.Is(err, faults.ErrInvalidParams) {
				t.Fatalf("Validate() = %v, want ErrInvalidParams", err)
			}
		})
	}
}

// fakeWorld records what faults asked of it. Its func fields script answers.
type fakeWorld struct {
	mu       sync.Mutex
	calls    []string
	events   []string
	process  *fakeProcess
	purgeErr error
	stuck    bool // an armed crash point is never reached
	// lateHit: the armed point is reached only as the step ends; the
	// disarm finds the process dying and gets no answer.
	lateHit bool
	hooked  bool // the process is killed by a hook (no failpoints)
}

var _ faults.World = (*fakeWorld)(nil)

func (w *fakeWorld) log(s string) { w.mu.Lock(); w.calls = append(w.calls, s); w.mu.Unlock() }

func (w *fakeWorld) AddToxic(_ context.Context, l faults.Link, t faults.Toxic) error {
	w.log("add " + string(l) + " " + t.Type + " " + t.Stream)
	return nil
}
func (w *fakeWorld) RemoveToxic(_ context.Context, l faults.Link, name string) error {
	w.log("remove " + string(l) + " " + name)
	return nil
}
func (w *fakeWorld) PrivatePath(_ context.Context, l faults.Link, ts ...faults.Toxic) (string, func(context.Context) error, error) {
	var parts []string
	for _, t := range ts {
		parts = append(parts, t.Type+" "+t.Stream)
	}
	w.log("private " + string(l) + " " + strings.Join(parts, ","))
	return "127.0.0.1:1", func(context.Context) error { w.log("teardown"); return nil }, nil
}
func (w *fakeWorld) ServiceURL() string { return "http://127.0.0.1:2" }
func (w *fakeWorld) Process(name string) faults.Process {
	if w.process == nil {
		return nil
	}
	if w.hooked {
		return hookProcess{w.process}
	}
	return w.process
}
func (w *fakeWorld) Failpoint(_ context.Context, process, point, action string, count int) error {
	w.log("failpoint " + process + " " + point + " " + action)
	if action == "crash" && w.process != nil && !w.stuck && !w.lateHit {
		w.process.die()
	}
	if action == "off" && w.lateHit && w.process != nil {
		go w.process.die() // reaped a moment after the refused disarm
		return errors.New("connection refused")
	}
	return nil
}
func (w *fakeWorld) Purge(context.Context) error { w.log("purge"); return w.purgeErr }
func (w *fakeWorld) SetReplicaDelay(_ context.Context, d time.Duration) error {
	w.log("delay " + d.String())
	return nil
}
func (w *fakeWorld) Record(kind, action string, op int64, _ any) {
	w.mu.Lock()
	w.events = append(w.events, kind+" "+action)
	w.mu.Unlock()
}
func (w *fakeWorld) Rand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

type fakeProcess struct {
	mu       sync.Mutex
	exited   chan struct{}
	restarts int
}

func newFakeProcess() *fakeProcess { return &fakeProcess{exited: make(chan struct{})} }
func (p *fakeProcess) die()        { p.mu.Lock(); close(p.exited); p.mu.Unlock() }
func (p *fakeProcess) Kill(context.Context) error {
	p.die()
	return nil
}
func (p *fakeProcess) Restart(context.Context) error {
	p.mu.Lock()
	p.exited = make(chan struct{})
	p.restarts++
	p.mu.Unlock()
	return nil
}
func (p *fakeProcess) Exited() <-chan struct{} { p.mu.Lock(); defer p.mu.Unlock(); return p.exited }

func route(t *testing.T, f faults.Fault, w *fakeWorld, a faults.Attempt) faults.Route {
	t.Helper()
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := f.(faults.Aimed).Route(context.Background(), w, a)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResponseDrop_PrivatePathCutsDownstream(t *testing.T) {
	t.Parallel()
	w := &fakeWorld{}
	r := route(t, &faults.ResponseDrop{}, w, faults.Attempt{Op: 7, Number: 1})
	if !r.Fresh || r.BaseURL != "http://127.0.0.1:1" {
		t.Fatalf("route %+v: want a fresh connection through the private path", r)
	}
	r.Done()
	if got := strings.Join(w.calls, "|"); got != "private service limit_data downstream|teardown" {
		t.Fatalf("calls %q", got)
	}
	if strings.Join(w.events, "|") != "response-drop fire" {
		t.Fatalf("events %v", w.events)
	}
}

func TestRetentionExpiry_DropsThenHoldsAndPurges(t *testing.T) {
	t.Parallel()
	w := &fakeWorld{}
	f := &faults.RetentionExpiry{After: time.Millisecond}
	route(t, f, w, faults.Attempt{Op: 1, Number: 1})
	start := time.Now()
	r := route(t, f, w, faults.Attempt{Op: 2, Number: 2})
	if r.BaseURL != "" || time.Since(start) < time.Millisecond {
		t.Fatalf("retry route %+v after %s: want the clean path after the hold", r, time.Since(start))
	}
	if got := strings.Join(w.calls, "|"); got != "private service limit_data downstream|purge" {
		t.Fatalf("calls %q", got)
	}
	w2 := &fakeWorld{purgeErr: faults.ErrUnsupported}
	route(t, f, w2, faults.Attempt{Op: 2, Number: 2}) // a service without purge still gets the late retry
}

func TestCrash_KillsAtFailpointAndRestarts(t *testing.T) {
	t.Parallel()
	p := newFakeProcess()
	w := &fakeWorld{process: p}
	f := &faults.Crash{}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := f.Apply(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if p.restarts != 1 || strings.Join(w.events, "|") != "crash fire|crash heal" {
		t.Fatalf("restarts %d, events %v", p.restarts, w.events)
	}
	if w.calls[0] != "failpoint service after-business-write-before-commit crash" {
		t.Fatalf("calls %v", w.calls)
	}
}

func TestCrash_NoProcessIsUnsupported(t *testing.T) {
	t.Parallel()
	f := &faults.Crash{Point: "now"}
	_ = f.Validate()
	if err := f.Apply(context.Background(), &fakeWorld{}); !errors.Is(err, faults.ErrUnsupported) {
		t.Fatalf("Apply = %v, want ErrUnsupported", err)
	}
}

func TestCrash_UnreachedPointReturnsWhenCancelled(t *testing.T) {
	t.Parallel()
	// No message ever reaches the point: the consumer never dies.
	w := &fakeWorld{process: newFakeProcess(), stuck: true}
	f := &faults.ConsumerRestart{}
	_ = f.Validate()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := f.Apply(ctx, w); err != nil {
		t.Fatalf("Apply = %v, want nil after the context ended", err)
	}
	if len(w.events) != 0 || w.process.restarts != 0 {
		t.Fatalf("events %v, restarts %d: nothing should have fired", w.events, w.process.restarts)
	}
	_ = f.Heal(context.Background(), w)
	if last := w.calls[len(w.calls)-1]; last != "failpoint consumer consumer-after-effect-before-ack off" {
		t.Fatalf("Heal did not disarm: %v", w.calls)
	}
}

func TestTimedFaults_ApplyAndHealRecordBoth(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"latency", "slow-db", "replica-lag"} {
		t.Run(kind, func(t *testing.T) {
			w := &fakeWorld{}
			f, _ := faults.New(kind)
			if err := f.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := f.Apply(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			if err := f.Heal(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			sort.Strings(w.events)
			if strings.Join(w.events, "|") != kind+" fire|"+kind+" heal" {
				t.Fatalf("events %v", w.events)
			}
		})
	}
}

// hookProcess is a fakeProcess that a hook kills: it has no failpoints.
type hookProcess struct{ *fakeProcess }

func (hookProcess) HookKilled() bool { return true }

// Aimed, a crash arms its point just before the aimed attempt leaves, so
// that the attempt dies there; it records the death and the restart, and
// an attempt aimed while the crash is under way goes its usual way.
func TestCrash_AimedArmsBeforeTheAttempt(t *testing.T) {
	t.Parallel()
	p := newFakeProcess()
	w := &fakeWorld{process: p}
	f := &faults.Crash{Point: "after-claim"}
	r := route(t, f, w, faults.Attempt{Op: 3, Number: 1})
	if r.BaseURL != "" || w.calls[0] != "failpoint service after-claim crash" {
		t.Fatalf("route %+v, calls %v: want the usual path, the point armed first", r, w.calls)
	}
	if err := f.Heal(context.Background(), w); err != nil { // waits for the restart
		t.Fatal(err)
	}
	w.mu.Lock()
	events := strings.Join(w.events, "|")
	w.mu.Unlock()
	if p.restarts != 1 || events != "crash fire|crash heal" {
		t.Fatalf("restarts %d, events %q; want one crash and its restart", p.restarts, events)
	}
	if !faults.IsAimed(f, true) || faults.IsAimed(f, false) {
		t.Fatal("a crash is aimed when its when picks intents, timed otherwise")
	}

	stuck := &fakeWorld{process: newFakeProcess(), stuck: true}
	g := &faults.Crash{Point: "after-claim"}
	route(t, g, stuck, faults.Attempt{Op: 1, Number: 1})
	if r := route(t, g, stuck, faults.Attempt{Op: 2, Number: 1}); r.BaseURL != "" || len(stuck.calls) != 1 {
		t.Fatalf("a second aimed attempt during the crash: route %+v, calls %v; want it untouched", r, stuck.calls)
	}
	if err := g.Heal(context.Background(), stuck); err != nil {
		t.Fatal(err)
	}
	if len(stuck.events) != 0 || stuck.calls[len(stuck.calls)-1] != "failpoint service after-claim off" {
		t.Fatalf("unreached point: events %v, calls %v; want no crash and the point disarmed", stuck.events, stuck.calls)
	}
}

// The step's last answer can be the one the point kills after: the step
// ends with the point reached but the death not yet reaped. The crash still
// counts, and the service comes back; left dead, it would refuse every later
// step's requests.
func TestCrash_PointReachedAsTheStepEndsStillRestarts(t *testing.T) {
	t.Parallel()
	for _, timed := range []bool{false, true} {
		p := newFakeProcess()
		w := &fakeWorld{process: p, lateHit: true}
		f := &faults.Crash{Point: "after-response-before-commit"}
		if timed {
			_ = f.Validate()
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the step ended before the death was reaped
			if err := f.Apply(ctx, w); err != nil {
				t.Fatal(err)
			}
		} else {
			route(t, f, w, faults.Attempt{Op: 28, Number: 1})
		}
		if err := f.Heal(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		events := strings.Join(w.events, "|")
		w.mu.Unlock()
		if p.restarts != 1 || events != "crash fire|crash heal" {
			t.Fatalf("timed %v: restarts %d, events %q; want the late death recorded and undone", timed, p.restarts, events)
		}
	}
}

// A service that a hook kills has no point to arm: the aimed attempt's
// answer is held back on a private path and the service killed at once.
func TestCrash_AimedAtAHookKilledServiceHoldsTheAttempt(t *testing.T) {
	t.Parallel()
	p := newFakeProcess()
	w := &fakeWorld{process: p, hooked: true}
	f := &faults.Crash{Point: "after-claim"}
	r := route(t, f, w, faults.Attempt{Op: 5, Number: 1})
	if !r.Fresh || r.BaseURL != "http://127.0.0.1:1" || w.calls[0] != "private service latency downstream" {
		t.Fatalf("route %+v, calls %v: want the attempt held on a private path", r, w.calls)
	}
	if err := f.Heal(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	r.Done()
	w.mu.Lock()
	events := strings.Join(w.events, "|")
	w.mu.Unlock()
	if p.restarts != 1 || events != "crash fire|crash heal" {
		t.Fatalf("restarts %d, events %q; want one kill and its restart", p.restarts, events)
	}
	for _, c := range w.calls {
		if strings.HasPrefix(c, "failpoint") && strings.HasSuffix(c, " crash") {
			t.Fatalf("calls %v: a hook-killed service has no point to arm", w.calls)
		}
	}
}
