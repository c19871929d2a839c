package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

// clientStep is how a step of a client scenario runs: the user's command
// once per intent, each invocation against its own listener on the fault
// proxy (issue 24).
type clientStep struct {
	command     []string
	env         map[string]string
	timeout     time.Duration
	concurrency int
	path        string
	tokens      map[string]string
	keyHeader   string
	// intentHeader tells the reference each forwarded request's intent.
	intentHeader string
	// pick reads the resource id out of an upstream's 2xx answer.
	pick func([]byte) (string, bool)
	// do, when set, is a Go client called in-process instead of command.
	do ClientDo
}

// exitUnknown is EX_TEMPFAIL: the client says the outcome is unknown.
const exitUnknown = 75

// newClientStep resolves a client scenario's invocation settings.
func newClientStep(s *scenarios.Scenario) (*clientStep, error) {
	expr := s.Effects.ResponseID
	if expr == "" {
		expr = "$.id" // the reference's, and most services'
	}
	pick, err := oracle.ResponseID(expr)
	if err != nil {
		return nil, fmt.Errorf("effects.response_id: %w", err)
	}
	c := s.Client
	cs := &clientStep{command: c.Command, env: c.Env, timeout: c.Timeout, concurrency: c.Concurrency,
		path: s.Endpoint.Path, tokens: s.Endpoint.Tokens, keyHeader: s.Endpoint.KeyHeader, pick: pick}
	if s.Target.Reference != nil {
		cs.intentHeader = "X-Intent-ID"
	}
	return cs, nil
}

// clientContractOf is the meta line's client_contract of s.
func clientContractOf(s *scenarios.Scenario) *history.ClientContract {
	k := s.Client.Contract
	return &history.ClientContract{Budget: k.Budget, GlobalBudget: k.GlobalBudget, RetryStatuses: k.RetryStatuses,
		PermanentStatuses: k.PermanentStatuses, MinBackoffMS: k.MinBackoff.Milliseconds(), Jitter: k.Jitter, Unknown: k.Unknown}
}

// clientBuiltFault is a client scenario's fault: aimed at attempts when
// its when picks intents or attempts (or says nothing: the first intent's
// first attempt), timed — a window hitting every intent — when it gives
// only at or for.
func clientBuiltFault(spec scenarios.FaultSpec, f faults.Fault) builtFault {
	w := spec.When
	timed := (w.At > 0 || w.For > 0) && w.Fraction == 0 && w.Nth == 0 && w.Attempts == 0 && !w.Every
	n := max(w.Attempts, 1)
	if w.Every {
		n = 0 // attempt 0 in Intent.Faults: every attempt
	}
	return builtFault{spec: spec, fault: f, aimed: !timed, attempts: n}
}

// clientPlan is a drawn plan made a client's: the client mints its own
// keys, and every intent starts when a slot is free.
func clientPlan(p Plan) Plan {
	p.Client = true
	for i := range p.Intents {
		p.Intents[i].Key, p.Intents[i].At = "", 0
	}
	return p
}

// clientStep runs one client step: a listener per intent, the command once
// per intent (concurrency at a time), every attempt recorded by listener.
// An intent whose client sent nothing to its address stops the run as the
// environment's error: its verdict would say nothing of the client.
func (s *session) clientStep(ctx context.Context, st *stepPlan, plan Plan) (driver.Stats, error) {
	cs := st.client
	cp := &clientPath{rec: s.rec, up: driver.NewForwarder(s.world.t.ClientURL, cs.concurrency, s.gate.For("the client's upstream").DialContext),
		faults: st.faults, windows: plan.Timed, begun: time.Now(), keyHeader: cs.keyHeader, intentHeader: cs.intentHeader,
		named: map[[2]string]string{}, pick: cs.pick}
	s.attrib = cp
	start := time.Now()
	ls := make([]*listener, len(plan.Intents))
	defer func() {
		// Forwards still waiting end first (a listener's close waits for them).
		cp.up.Close()
		for _, l := range ls {
			if l != nil {
				l.close()
			}
		}
	}()
	for i := range plan.Intents {
		l, err := cp.open(ctx, s.gate, &plan.Intents[i])
		if err != nil {
			return driver.Stats{}, err
		}
		ls[i] = l
	}
	sem := make(chan struct{}, max(cs.concurrency, 1))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for _, l := range ls {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.invoke(ctx, cs, l); err != nil {
				mu.Lock()
				first = cmpErr(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	stats := driver.Stats{Intents: len(ls), Elapsed: time.Since(start)}
	var silent []string
	for _, l := range ls {
		n := l.attempts()
		stats.Requests += int64(n)
		if n == 0 {
			silent = append(silent, l.in.ID)
		}
	}
	if first != nil {
		return stats, first
	}
	if len(silent) > 0 && ctx.Err() == nil {
		return stats, fmt.Errorf("%w: intent %s: the client sent nothing to its address (IDEMCHAOS_URL): it ignored IDEMCHAOS_URL%s",
			ErrSetup, silent[0], moreOf(len(silent)-1, "intent"))
	}
	return stats, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func moreOf(n int, what string) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d more %ss)", n, what)
}

// invoke runs the command once for l's intent, as a process group of its
// own killed at the timeout, and records its start and its belief.
func (s *session) invoke(ctx context.Context, cs *clientStep, l *listener) error {
	defer close(l.ended)
	in := l.in
	if cs.do != nil {
		_ = s.rec.Write(&history.Event{Type: history.TypeInvocation, Intent: in.ID, Tenant: in.Tenant, Action: "start", Body: in.Body})
		e := callDo(ctx, cs, l)
		if ctx.Err() != nil {
			return nil
		}
		return s.rec.Write(&e)
	}
	cmd := exec.Command(cs.command[0], cs.command[1:]...)
	cmd.Env = append(os.Environ(), envList(cs.env)...)
	cmd.Env = append(cmd.Env, "IDEMCHAOS_URL=http://"+l.addr, "IDEMCHAOS_PATH="+cs.path, "IDEMCHAOS_TOKEN="+cs.tokens[in.Tenant],
		"IDEMCHAOS_INTENT="+in.ID, "IDEMCHAOS_TENANT="+in.Tenant, "IDEMCHAOS_BODY="+string(in.Body))
	cmd.Stdin = bytes.NewReader(in.Body)
	var stdout tailBuffer
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second // a grandchild holding the pipes open
	ownGroup(cmd)
	_ = s.rec.Write(&history.Event{Type: history.TypeInvocation, Intent: in.ID, Tenant: in.Tenant, Action: "start", Body: in.Body})
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: client.command: %w", ErrSetup, err)
	}
	var killed atomic.Bool
	timer := time.AfterFunc(cs.timeout, func() { killed.Store(true); killGroup(cmd) })
	stop := context.AfterFunc(ctx, func() { killGroup(cmd) })
	err := cmd.Wait()
	timer.Stop()
	stop()
	killGroup(cmd) // what it left running
	e := history.Event{Type: history.TypeBelief, Intent: in.ID, Tenant: in.Tenant, Resource: lastLine(stdout.Bytes())}
	var ee *exec.ExitError
	switch {
	case killed.Load():
		e.Exit, e.Belief, e.Error = -1, history.BeliefFailure, fmt.Sprintf("killed at timeout %s", fmtDuration(cs.timeout))
	case err == nil:
		e.Belief = history.BeliefSuccess
	case errors.As(err, &ee):
		e.Exit = ee.ExitCode()
		e.Belief = history.BeliefFailure
		if e.Exit == exitUnknown {
			e.Belief = history.BeliefUnknown
		}
		if e.Exit < 0 {
			e.Error = ee.String()
		}
	default:
		e.Exit, e.Belief, e.Error = -1, history.BeliefFailure, err.Error()
	}
	if ctx.Err() != nil {
		return nil // the run was interrupted: no belief to record
	}
	return s.rec.Write(&e)
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	return s
}

// lastLine is the last non-empty line of out, clipped: the resource id a
// client printed.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			if len(l) > 200 {
				l = l[:200]
			}
			return l
		}
	}
	return ""
}

// tailBuffer keeps the last 64 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - 64<<10; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

// Bytes returns what it holds.
func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.b)
}
