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
	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/proc"
	"github.com/idemchaos/idemchaos/internal/proxy"
	"github.com/idemchaos/idemchaos/scenarios"
)

// world is what faults act on in one run: it implements [faults.World] over
// the environment's proxies, the target's processes and the recorder.
type world struct {
	proxies proxy.Server
	t       *target
	standby replicaDelayer
	hooks   scenarios.Hooks
	rec     *driver.Recorder
	rng     *lockedRand
	paths   atomic.Int64
}

var _ faults.World = (*world)(nil)

// replicaDelayer is a standby whose apply delay can change at run time
// (the local one, or the docker environment's).
type replicaDelayer interface {
	SetApplyDelay(ctx context.Context, d time.Duration) error
}

var _ replicaDelayer = (*pgcluster.Standby)(nil)

func (w *world) link(l faults.Link) (string, error) {
	switch {
	case l == faults.ServiceLink:
		return w.t.svcProxy, nil
	case l == faults.DatabaseLink && w.t.dbProxy != "":
		return w.t.dbProxy, nil
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
	u, err := url.Parse(w.t.serviceURL)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("%s-p%d", w.t.svcProxy, w.paths.Add(1))
	upstream := u.Host
	if w.t.upstream != "" {
		upstream = w.t.upstream
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

func (w *world) ServiceURL() string { return w.t.serviceURL }

func (w *world) Process(name string) faults.Process {
	if p, ok := w.t.procs[name]; ok {
		return p
	}
	var p *proc.Process
	var kill, restart string
	switch name {
	case "service":
		p, kill, restart = w.t.service, w.hooks.Kill, w.hooks.Restart
	case "consumer":
		p, kill, restart = w.t.consumer, w.hooks.KillConsumer, w.hooks.RestartConsumer
	}
	if p != nil {
		return supervised{p}
	}
	if kill != "" && restart != "" {
		return &hooked{kill: kill, restart: restart, dead: make(chan struct{})}
	}
	return nil
}

func (w *world) Failpoint(ctx context.Context, process, point, action string, count int) error {
	base, ok := w.t.debugURL[process]
	if !ok {
		if action == "crash" && w.Process(process) != nil {
			// A hooked process has no failpoints: kill it now instead.
			return w.Process(process).Kill(ctx)
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
		select {
		case <-w.Process(process).Exited():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
	return err
}

func (w *world) Purge(ctx context.Context) error {
	if _, ok := w.t.debugURL["service"]; ok {
		return debugCall(ctx, http.MethodPost, w.t.debugURL["service"]+"/debug/purge")
	}
	if w.hooks.Purge != "" {
		return runHook(ctx, w.hooks.Purge, nil)
	}
	return faults.ErrUnsupported
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

// hooked is a process of an external target, killed and restarted by the
// scenario's hook commands.
type hooked struct {
	kill, restart string
	mu            sync.Mutex
	dead          chan struct{}
}

func (h *hooked) Kill(ctx context.Context) error {
	if err := runHook(ctx, h.kill, nil); err != nil {
		return err
	}
	h.mu.Lock()
	close(h.dead)
	h.mu.Unlock()
	return nil
}

func (h *hooked) Restart(ctx context.Context) error {
	if err := runHook(ctx, h.restart, nil); err != nil {
		return err
	}
	h.mu.Lock()
	h.dead = make(chan struct{})
	h.mu.Unlock()
	return nil
}

func (h *hooked) Exited() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead
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
