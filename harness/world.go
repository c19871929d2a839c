package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/proc"
	"github.com/idemchaos/idemchaos/internal/proxy"
	"github.com/idemchaos/idemchaos/scenarios"
)

// world is what faults act on in one run: it implements [faults.World] over
// the environment's proxies, the target's processes and the recorder.
type world struct {
	proxies proxy.Server
	t       *sut.Target
	standby sut.ReplicaDelayer
	hooks   scenarios.Hooks
	rec     *driver.Recorder
	rng     *lockedRand
	paths   atomic.Int64

	// procs holds one handle per process name, shared by every fault of the
	// run: a crash fault waits on the exit channel that the kill closes.
	procMu sync.Mutex
	procs  map[string]faults.Process
	// deadGrace is how long an arming whose answer was lost waits for the
	// process to die (0 means [crashArmGrace]).
	deadGrace time.Duration
}

// crashArmGrace bounds the wait for a process whose crash arming went
// unanswered to be seen dead.
const crashArmGrace = 2 * time.Second

// upWait bounds how long an action that needs a process waits for a
// crash fault to bring it back: longer than a restart may take.
const upWait = 60 * time.Second

var _ faults.World = (*world)(nil)

var _ sut.ReplicaDelayer = (*pgcluster.Standby)(nil)

func (w *world) link(l faults.Link) (string, error) {
	switch {
	case l == faults.ServiceLink:
		return w.t.ServiceProxy, nil
	case l == faults.DatabaseLink && w.t.DatabaseProxy != "":
		return w.t.DatabaseProxy, nil
	}
	return "", fmt.Errorf("%w: no %s link (for an external service, give the database address so the harness can proxy it)", faults.ErrUnsupported, l)
}

func wireToxic(t faults.Toxic) proxy.Toxic {
	return proxy.Toxic{Name: t.Name, Type: t.Type, Stream: proxy.Stream(t.Stream), Attributes: t.Attributes}
}

func (w *world) AddToxic(ctx context.Context, l faults.Link, t faults.Toxic) error {
	name, err := w.link(l)
	if err != nil {
		return err
	}
	return w.proxies.AddToxic(ctx, name, wireToxic(t))
}

func (w *world) RemoveToxic(ctx context.Context, l faults.Link, toxic string) error {
	name, err := w.link(l)
	if err != nil {
		return err
	}
	err = w.proxies.RemoveToxic(ctx, name, toxic)
	if errors.Is(err, proxy.ErrToxicNotFound) {
		return nil
	}
	return err
}

func (w *world) PrivatePath(ctx context.Context, l faults.Link, toxics ...faults.Toxic) (string, func(context.Context) error, error) {
	if l != faults.ServiceLink {
		return "", nil, fmt.Errorf("%w: private paths exist for the service link only", faults.ErrUnsupported)
	}
	u, err := url.Parse(w.t.ServiceURL)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("%s-p%d", w.t.ServiceProxy, w.paths.Add(1))
	upstream := u.Host
	if w.t.Upstream != "" {
		upstream = w.t.Upstream
	}
	addr, err := w.proxies.CreateProxy(ctx, name, "", upstream)
	if err != nil {
		return "", nil, err
	}
	for _, t := range toxics {
		if err := w.proxies.AddToxic(ctx, name, wireToxic(t)); err != nil {
			_ = w.proxies.RemoveProxy(ctx, name)
			return "", nil, err
		}
	}
	return addr, func(ctx context.Context) error { return w.proxies.RemoveProxy(ctx, name) }, nil
}

func (w *world) ServiceURL() string { return w.t.ServiceURL }

func (w *world) Process(name string) faults.Process {
	w.procMu.Lock()
	defer w.procMu.Unlock()
	if p, ok := w.procs[name]; ok {
		return p
	}
	if p, ok := w.t.Processes[name]; ok {
		// The environment's own handle (a child, a container): already
		// shared.
		return p
	}
	var kill, restart string
	switch name {
	case "service":
		kill, restart = w.hooks.Kill, w.hooks.Restart
	case "consumer":
		kill, restart = w.hooks.KillConsumer, w.hooks.RestartConsumer
	}
	if kill == "" || restart == "" {
		return nil
	}
	p := newHooked(name, kill, restart)
	if w.procs == nil {
		w.procs = map[string]faults.Process{}
	}
	w.procs[name] = p
	return p
}

func (w *world) Failpoint(ctx context.Context, process, point, action string, count int) error {
	base, ok := w.t.DebugURLs[process]
	if !ok {
		if h, isHooked := w.Process(process).(*hooked); isHooked && (action == "crash" || action == "off") {
			return w.armHooked(h, point, action)
		}
		return fmt.Errorf("%w: %s has no failpoints", faults.ErrUnsupported, process)
	}
	method, u := http.MethodPost, fmt.Sprintf("%s/debug/failpoints/%s?action=%s&count=%d", base, url.PathEscape(point), action, count)
	if action == "off" {
		method, u = http.MethodDelete, base+"/debug/failpoints/"+url.PathEscape(point)
	}
	err := debugCall(ctx, method, u)
	if err != nil && action == "crash" {
		// Under load a request already on its way can trip the point
		// before the arming answer is written: the process dies with the
		// answer unsent. A process that died has been armed and fired.
		grace := w.deadGrace
		if grace <= 0 {
			grace = crashArmGrace
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-w.Process(process).Exited():
			return nil
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return err
}

// Purge asks the service to purge expired records. A crash fault may have
// the service down at that moment: the purge waits for the restart, and is
// asked again if the service died while answering.
func (w *world) Purge(ctx context.Context) error {
	var purge func(context.Context) error
	switch {
	case w.t.DebugURLs["service"] != "":
		purge = func(ctx context.Context) error {
			return debugCall(ctx, http.MethodPost, w.t.DebugURLs["service"]+"/debug/purge")
		}
	case w.hooks.Purge != "":
		purge = func(ctx context.Context) error { return runHook(ctx, w.hooks.Purge, nil) }
	default:
		return faults.ErrUnsupported
	}
	p := w.Process("service")
	for try := 1; ; try++ {
		var died <-chan struct{}
		if p != nil {
			if err := waitUp(ctx, p); err != nil {
				return fmt.Errorf("purge: the service is down: %w", err)
			}
			died = p.Exited()
		}
		err := purge(ctx)
		if err == nil || died == nil || try == 3 {
			return err
		}
		// A service that crashed at a failpoint is dead before its exit
		// is reaped: a purge refused then is the crash, not an answer.
		// Wait a moment for the exit to show; a live service that
		// refused the purge keeps its error.
		t := time.NewTimer(exitShows)
		select {
		case <-died: // it crashed under the purge: ask its next incarnation
			t.Stop()
		case <-t.C:
			return err
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// exitShows bounds how long a failed purge waits for the service's exit to
// be reaped before it takes the failure as the service's answer.
const exitShows = 2 * time.Second

// upWaiter is a process handle that can tell when it is up again.
type upWaiter interface {
	WaitUp(ctx context.Context) error
}

// waitUp waits, within [upWait], until p runs.
func waitUp(ctx context.Context, p faults.Process) error {
	u, ok := p.(upWaiter)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, upWait)
	defer cancel()
	if err := u.WaitUp(ctx); err != nil {
		return fmt.Errorf("not back within %s: %w", upWait, err)
	}
	return nil
}

func (w *world) SetReplicaDelay(ctx context.Context, d time.Duration) error {
	if w.standby != nil {
		return w.standby.SetApplyDelay(ctx, d)
	}
	if w.hooks.ReplicaDelay != "" {
		return runHook(ctx, w.hooks.ReplicaDelay, []string{"DELAY_MS=" + strconv.FormatInt(d.Milliseconds(), 10)})
	}
	return fmt.Errorf("%w: no standby", faults.ErrUnsupported)
}

func (w *world) Record(kind, action string, op int64, detail any) {
	_ = w.rec.Fault(kind, action, op, detail)
}

func (w *world) Rand() *rand.Rand { return rand.New(w.rng) }

// debugClient talks to failpoint and purge endpoints: loopback, short.
// No keep-alive: services come and go on reused ports, and a POST on a
// stale pooled connection to a dead one fails instead of reaching the new.
// They are the harness's own processes, so loopback only, whatever the
// command line allows.
var debugClient = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
	DialContext: addrgate.Loopback().For("a failpoint endpoint").DialContext}, Timeout: 10 * time.Second}

func debugCall(ctx context.Context, method, u string) error {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	resp, err := debugClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: status %d", method, u, resp.StatusCode)
	}
	return nil
}

// supervised adapts a supervised child to [faults.Process].
type supervised struct{ p *proc.Process }

func (s supervised) Kill(ctx context.Context) error    { return s.p.Kill(ctx) }
func (s supervised) Restart(ctx context.Context) error { return s.p.Restart(ctx) }
func (s supervised) Exited() <-chan struct{}           { return s.p.Exited() }
func (s supervised) WaitUp(ctx context.Context) error  { return s.p.WaitUp(ctx) }

// hooked is a process of an external target, killed and restarted by the
// scenario's hook commands. One value per process serves the whole run.
type hooked struct {
	name          string
	kill, restart string

	mu   sync.Mutex
	dead chan struct{} // closed when the kill hook has killed it
	up   chan struct{} // closed while it runs
	// armed is the crash point waiting for its moment ("" for none).
	armed string
	watch sync.Once // the recorder sink that fires an armed crash
}

func newHooked(name, kill, restart string) *hooked {
	up := make(chan struct{})
	close(up)
	return &hooked{name: name, kill: kill, restart: restart, dead: make(chan struct{}), up: up}
}

func (h *hooked) Kill(ctx context.Context) error {
	h.mu.Lock()
	select {
	case <-h.dead:
		h.mu.Unlock()
		return proc.ErrNotRunning
	default:
	}
	h.mu.Unlock()
	if err := runHook(ctx, h.kill, nil); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.dead: // two faults killed it at once
	default:
		h.up = make(chan struct{})
		close(h.dead)
	}
	return nil
}

func (h *hooked) Restart(ctx context.Context) error {
	if err := runHook(ctx, h.restart, nil); err != nil {
		return err
	}
	h.mu.Lock()
	select {
	case <-h.dead:
		h.dead = make(chan struct{})
		close(h.up)
	default:
	}
	h.mu.Unlock()
	return nil
}

// HookKilled implements [faults.HookKilled]: a user's service has no
// failpoints.
func (*hooked) HookKilled() bool { return true }

func (h *hooked) Exited() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead
}

func (h *hooked) WaitUp(ctx context.Context) error {
	h.mu.Lock()
	up := h.up
	h.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// armHooked stands in for a failpoint on an external process, which has
// none: a crash armed at a point is the kill hook run as soon as the
// service has acknowledged an attempt after the arming — with traffic in
// flight, and with an acknowledged write that must survive. The crash fault
// then records the death and runs the restart hook.
func (w *world) armHooked(h *hooked, point, action string) error {
	h.mu.Lock()
	if action == "off" {
		h.armed = ""
	} else {
		h.armed = point
	}
	h.mu.Unlock()
	h.watch.Do(func() { w.rec.OnEvent(h.fireOn(w)) })
	return nil
}

// fireOn returns the recorder sink that runs the kill hook of an armed
// crash once an attempt is acknowledged.
func (h *hooked) fireOn(w *world) func(*history.Event) {
	return func(e *history.Event) {
		if e.Type != history.TypeOK || e.Resp == nil || e.Resp.Status/100 != 2 {
			return
		}
		h.mu.Lock()
		point := h.armed
		h.armed = ""
		h.mu.Unlock()
		if point == "" {
			return
		}
		// The hook may take a while: never inside the recorder's call.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := h.Kill(ctx); err != nil && !errors.Is(err, proc.ErrNotRunning) {
				w.Record("crash", "error", 0, map[string]any{"process": h.name, "point": point, "error": err.Error()})
			}
		}()
	}
}

// runHook runs a scenario hook with sh -c, bounded by ctx.
func runHook(ctx context.Context, command string, env []string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("hook %q: %w: %s", command, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// lockedRand is the run's single seeded source, shared by the faults that
// run concurrently.
type lockedRand struct {
	mu  sync.Mutex
	src *rand.PCG
}

func newLockedRand(seed int64) *lockedRand {
	return &lockedRand{src: rand.NewPCG(uint64(seed), 0x1dc4a05)}
}

func (r *lockedRand) Uint64() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.src.Uint64()
}
