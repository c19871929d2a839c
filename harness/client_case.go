package harness

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

// Intent is what one call of a Go client under test is asked to do
// ([ClientCase.Do]): the payload to send, for which tenant, with which
// bearer token, to which path of the base URL it is given.
type Intent struct {
	ID     string
	Tenant string
	Token  string
	Path   string
	Body   []byte
}

// BeliefOutcome is what a client believes of its call: the Go form of a
// client command's exit status (0, 75, anything else).
type BeliefOutcome string

// The outcomes a client may believe.
const (
	Succeeded BeliefOutcome = history.BeliefSuccess
	Unknown   BeliefOutcome = history.BeliefUnknown
	Failed    BeliefOutcome = history.BeliefFailure
)

// Belief is what a Go client says it did: its outcome and, when it
// created one, the resource's id.
type Belief struct {
	Outcome  BeliefOutcome
	Resource string
}

// ClientDo is one call of a Go client under test: send in to baseURL (the
// intent's own address on the fault proxy) as the SDK would, and say what
// it believes. An error with no outcome is a failure.
type ClientDo func(ctx context.Context, baseURL string, in Intent) (Belief, error)

// ClientCase is the Go twin of a client scenario: an SDK written in Go
// under test in-process. Each step is a client scenario (a file or an
// Inline one); its client.command is not run: Do is called once per intent
// instead, with the step's client.timeout as its deadline.
type ClientCase struct {
	Do ClientDo
	// Env is the upstream's environment: the bundled reference by default
	// (LocalEnv), or the team's own service (ExternalEnv(url), as
	// --target is the command's: its effects.url moves with it).
	Env   EnvSpec
	Steps []Step
	// Seed seeds every step that sets none (default 1).
	Seed int64
	// AllowRemote is the Go form of --allow-remote (see [Case.AllowRemote]).
	AllowRemote bool
	_           struct{}
}

// TestClient runs c and reports through t, as [Test] does for a server:
// each step must meet its expectation (clean, or its ExpectViolation).
func TestClient(t TB, c ClientCase) {
	t.Helper()
	if c.Do == nil {
		t.Fatalf("harness: a ClientCase needs Do")
		return
	}
	loaded, err := Case{Steps: c.Steps}.validate()
	if err != nil {
		t.Fatalf("%v", err)
		return
	}
	for i, s := range loaded {
		if !s.IsClient() {
			t.Fatalf("harness: step %d/%d: %s is not a client scenario (it has no client: block)", i+1, len(loaded), s.Name)
			return
		}
	}
	ctx := context.Background()
	r, ok := openCase(t, c.Env, c.AllowRemote, loaded)
	if !ok {
		return
	}
	for i, st := range c.Steps {
		s := loaded[i]
		seed := st.Seed
		if seed == 0 {
			seed = max(c.Seed, 1)
		}
		opts := RunOptions{Seed: seed, Expect: st.ExpectViolation, do: c.Do,
			Invocation: Invocation{Target: c.Env.url, AllowRemote: c.AllowRemote}}
		out, err := r.Run(ctx, s, opts)
		where := fmt.Sprintf("step %d/%d (%s, seed %d)", i+1, len(c.Steps), s.Name, seed)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		judgeStep(t, where, st, out)
	}
}

// callDo runs one in-process call of a Go client for l's intent, bounded
// by the step's timeout, and returns its belief event.
func callDo(ctx context.Context, cs *clientStep, l *listener) history.Event {
	in := l.in
	cctx, cancel := context.WithTimeout(ctx, cs.timeout)
	defer cancel()
	b, err := cs.do(cctx, "http://"+l.addr, Intent{ID: in.ID, Tenant: in.Tenant, Token: cs.tokens[in.Tenant], Path: cs.path, Body: in.Body})
	e := history.Event{Type: history.TypeBelief, Intent: in.ID, Tenant: in.Tenant, Resource: b.Resource, Belief: string(b.Outcome)}
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		e.Exit, e.Belief, e.Error = -1, history.BeliefFailure, fmt.Sprintf("cut at timeout %s", fmtDuration(cs.timeout))
	case e.Belief == "" && err != nil:
		e.Exit, e.Belief, e.Error = 1, history.BeliefFailure, err.Error()
	case e.Belief == "":
		e.Belief = history.BeliefSuccess
	}
	switch e.Belief {
	case history.BeliefUnknown:
		e.Exit = exitUnknown
	case history.BeliefFailure:
		e.Exit = max(e.Exit, 1)
	case history.BeliefSuccess:
	default:
		e.Exit, e.Error, e.Belief = 1, fmt.Sprintf("Do returned the outcome %q (want succeeded, unknown or failed)", b.Outcome), history.BeliefFailure
	}
	return e
}
