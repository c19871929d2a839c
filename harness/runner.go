package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/ctxwait"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/internal/proxy"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ErrSetup is wrapped by errors that stopped a run before it could judge
// anything: the target did not start, a fault is unsupported, the oracle
// could not be read. They are environment errors, not verdicts.
var ErrSetup = errors.New("run setup")

// Runner runs scenarios in one environment.
type Runner struct {
	// Local runs reference targets; External runs url targets.
	Local    *env.Local
	External *env.External
	// Docker runs reference and image targets in containers.
	Docker *DockerEnv
	// HistoryDir keeps one history file per run ("" = the system temp dir).
	HistoryDir string
	// OnEvent sees every event recorded (progress displays). Must not block.
	OnEvent func(*history.Event)
	// addrs is the address gate [Open] checked the environment with; the
	// oracles and the driver connect through it (nil: loopback only).
	addrs *addrgate.Gate
	_     struct{}
}

// RunOptions say how to run one scenario.
type RunOptions struct {
	Seed int64
	// Mutant overrides the reference target's mutant; "" keeps the
	// scenario's, and [CorrectService] forces the correct service.
	Mutant string
	// Plans replaces generated plans (by step index), to replay or shrink.
	Plans map[int]Plan
	// HistoryPath names the history file ("" = a new file in HistoryDir).
	HistoryPath string
	// Invocation is how the run was started, for its replay command.
	Invocation Invocation
	_          struct{}
}

// CorrectService as [RunOptions.Mutant] runs the reference without a mutant.
const CorrectService = "none"

// StepOutcome is what one step did and found.
type StepOutcome struct {
	Name   string
	Expect string // "clean" or an invariant name
	Plan   Plan
	Stats  driver.Stats
	Result checkers.Result
	// Met says the step's expectation held.
	Met bool
}

// Outcome is the result of running a scenario once.
type Outcome struct {
	Scenario    *scenarios.Scenario
	Seed        int64
	Mutant      string
	Steps       []StepOutcome
	HistoryPath string
	History     *history.History
	Requests    int64
	Elapsed     time.Duration
	// Invocation is how the run was started (see [RunOptions]).
	Invocation Invocation
}

// Verdict is the worst verdict over the steps' checks.
func (o *Outcome) Verdict() checkers.Verdict {
	v := checkers.Pass
	for _, s := range o.Steps {
		v = max(v, s.Result.Verdict)
	}
	return v
}

// Met says every step's expectation held.
func (o *Outcome) Met() bool {
	for _, s := range o.Steps {
		if !s.Met {
			return false
		}
	}
	return len(o.Steps) > 0
}

// ReplayCommand is the exact command that replays this run: the same
// scenario, environment, seed, mutant and flags give the same plan (see
// [ReplayCommand]).
func (o *Outcome) ReplayCommand() string {
	return ReplayCommand(o.Scenario, o.Seed, o.Mutant, o.Invocation)
}

// Caught lists the invariants violated in any step, in canonical order.
func (o *Outcome) Caught() []string {
	seen := map[string]bool{}
	for _, s := range o.Steps {
		for _, r := range s.Result.Results {
			if r.Verdict == checkers.Violated {
				seen[r.Name] = true
			}
		}
	}
	var out []string
	for _, n := range checkers.Names() {
		if seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// Run runs the scenario once: start the target, then each step's plan with
// its faults, then read the effects and check. The history file is kept
// whatever happens, including when ctx is cancelled.
func (r *Runner) Run(ctx context.Context, s *scenarios.Scenario, opts RunOptions) (*Outcome, error) {
	start := time.Now()
	mutant := ""
	if s.Target.Reference != nil {
		mutant = s.Target.Reference.Mutant
	}
	switch opts.Mutant {
	case "":
	case CorrectService:
		mutant = ""
	default:
		mutant = opts.Mutant
	}
	out := &Outcome{Scenario: s, Seed: opts.Seed, Mutant: mutant, Invocation: opts.Invocation}
	if r.Docker != nil && out.Invocation.Env == "" && s.Target.Image == "" {
		out.Invocation.Env = string(EnvDocker) // an image target picks docker by itself
	}
	steps := s.EffectiveSteps()
	built := make([][]builtFault, len(steps))
	for i := range steps {
		fs, err := buildFaults(s, i)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		built[i] = fs
	}
	t, err := r.startTarget(ctx, s, mutant)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer t.close(context.WithoutCancel(ctx))

	path, f, err := r.historyFile(s, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer f.Close()
	out.HistoryPath = path
	ora := oracleFor(r.gate(), s, t.dsn, t.hasConsumer())
	begun := time.Now()
	contract, err := s.CheckerContract()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	meta, err := writeMeta(f, s.Name, opts.Seed, begun, contract.Meta(), ora != nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	rec := driver.NewRecorderAt(history.NewWriter(f), begun)
	if r.OnEvent != nil {
		rec.OnEvent(r.OnEvent)
	}
	defer rec.Flush()
	// A run cut short leaves a partial history: it says so, so that a
	// later check reads unknown, never a violation.
	defer func() {
		if ctx.Err() != nil {
			_ = rec.Interrupted(context.Cause(ctx).Error())
		}
	}()
	// Flush as the run goes, so the file can be followed while it runs and
	// a run killed outright still leaves most of its history.
	flushDone := make(chan struct{})
	defer close(flushDone)
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-flushDone:
				return
			case <-t.C:
				_ = rec.Flush()
			}
		}
	}()
	w := &world{proxies: r.proxies(), t: t, hooks: s.Hooks, rec: rec, rng: newLockedRand(opts.Seed)}
	if sb := r.standby(); sb != nil && s.Target.Reference != nil {
		w.standby = sb
	}
	recorded := map[string]bool{}
	named, err := newAcks(s.Effects.ResponseID)
	if err != nil {
		return nil, fmt.Errorf("%w: effects.response_id: %w", ErrSetup, err)
	}
	if named != nil {
		rec.OnEvent(named.event)
	}
	checker, loadOpts, err := checkerFor(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	// A user's service remembers every key it ever saw: keys carry the
	// scenario's name and a nonce of this run, so neither another scenario
	// nor an earlier run can collide with them. The reference starts from an
	// empty database every run, so its keys stay the same for a seed.
	keyPrefix := ""
	if s.Target.Reference == nil {
		keyPrefix = fmt.Sprintf("%s-%s-", s.Name, runNonce())
	}
	var prev Plan
	for i, st := range steps {
		if st.Wait > 0 && !ctxwait.Sleep(ctx, st.Wait) {
			break
		}
		tr := stepTraffic(s, st)
		plan, ok := opts.Plans[i]
		switch {
		case ok:
		case st.Callbacks != nil:
			if err := rec.Flush(); err != nil {
				return out, err
			}
			if plan, err = callbackPlan(path, s.Endpoint.Path, *st.Callbacks, opts.Seed+int64(i)); err != nil {
				return out, fmt.Errorf("%w: %w", ErrSetup, err)
			}
			plan = withFaults(plan, built[i])
		case st.Resend && i > 0:
			plan = resendPlan(prev, opts.Seed+int64(i), built[i])
		default:
			plan = generatePlan(opts.Seed+int64(i), tr, requestOf(s), built[i], tenantsOf(s), stepPrefix(i), keyPrefix)
		}
		prev = plan
		t.tokens = withProvider(s.Endpoint.Tokens, st.Callbacks)
		// Until this step's effects are read, the history says they are
		// not: a run interrupted now keeps a history that cannot be judged
		// on effects, rather than one that claims none were made.
		if err := meta.set(false); err != nil {
			return out, err
		}
		stats, stopFaults, err := r.runStep(ctx, w, t, tr, s, plan, built[i])
		out.Requests += stats.Requests
		so := StepOutcome{Name: st.Name, Expect: expectOf(st), Plan: plan, Stats: stats}
		if err == nil {
			err = recordEffects(ctx, ora, rec, recorded, named)
		}
		if err == nil && ctx.Err() == nil {
			if err = rec.Flush(); err == nil {
				err = meta.set(true)
			}
		}
		if ferr := stopFaults(); err == nil {
			err = ferr
		}
		if err != nil {
			if !errors.Is(err, ErrSetup) {
				err = fmt.Errorf("%w: %w", ErrSetup, err)
			}
			return out, err
		}
		if err := rec.Flush(); err != nil {
			return out, err
		}
		h, err := loadHistory(path, loadOpts)
		if err != nil {
			return out, err
		}
		out.History = h
		so.Result = checker.Check(h, h.Effects)
		if why := nothingSucceeded(h); why != "" && so.Result.Verdict == checkers.Pass {
			// Every check passes vacuously when nothing executed: a wrong
			// path, body or token must not read as a clean service.
			so.Result.Verdict, so.Result.Reason = checkers.Unknown, why
		}
		if stats.Budget && so.Result.Verdict == checkers.Pass {
			// Attempts the budget stopped were never judged: a pass on
			// the part that ran would claim more than the run knows.
			so.Result.Verdict, so.Result.Reason = checkers.Unknown, fmt.Sprintf(
				"the request budget ran out (max_requests %d) before every intent was sent and retried; raise traffic.max_requests", tr.MaxRequests)
		}
		so.Met = expectationMet(so.Expect, so.Result)
		out.Steps = append(out.Steps, so)
		if ctx.Err() != nil {
			break
		}
	}
	out.Elapsed = time.Since(start)
	return out, ctx.Err()
}

func (r *Runner) proxies() proxy.Server {
	switch {
	case r.Local != nil:
		return r.Local.Proxies()
	case r.Docker != nil:
		return r.Docker.env.Proxies()
	}
	return r.External.Proxies()
}

// standby is the environment's standby, or nil (never a typed nil).
func (r *Runner) standby() replicaDelayer {
	switch {
	case r.Local != nil && r.Local.Standby() != nil:
		return r.Local.Standby()
	case r.Docker != nil && r.Docker.env.Standby() != nil:
		return r.Docker.env
	}
	return nil
}

func (r *Runner) startTarget(ctx context.Context, s *scenarios.Scenario, mutant string) (*target, error) {
	tokens := s.Endpoint.Tokens
	if r.Docker != nil {
		return r.Docker.startTarget(ctx, s, mutant, tokens)
	}
	if s.Target.Reference != nil {
		if r.Local == nil {
			return nil, errors.New("a reference target needs the local environment")
		}
		return startReference(ctx, r.Local, *s.Target.Reference, mutant, tokens)
	}
	if r.External == nil {
		return nil, errors.New("a url target needs the external environment")
	}
	return startExternal(r.External, &s.Target, s.Effects.DSN, tokens), nil
}

// oracleFor is the one place an effect oracle is made from a scenario:
// the reference's reads its database (dsn), waiting for its consumer to
// drain the queue when one runs; sql and http read the user's service.
// nil: the scenario reads no effects.
func oracleFor(g *addrgate.Gate, s *scenarios.Scenario, dsn string, consumer bool) oracle.Oracle {
	switch s.Effects.Oracle {
	case "reference":
		drain := time.Duration(0)
		if consumer && s.Target.Reference != nil {
			drain = 10*time.Second + s.Target.Reference.VisibilityTimeout
		}
		return oracle.Reference(dsn, drain)
	case "sql":
		if s.Effects.DSN != "" {
			dsn = s.Effects.DSN // else an image target's own database
		}
		return oracle.SQL(dsn, s.Effects.Query, oracle.Through(g.For("effects.dsn")))
	case "http":
		return oracle.HTTP(s.Effects.URL, s.Effects.Items, s.Effects.Tenant, s.Effects.Key, s.Effects.ID, oracle.Through(g.For("effects.url")))
	}
	return nil
}

func (r *Runner) historyFile(s *scenarios.Scenario, opts RunOptions) (string, *os.File, error) {
	if opts.HistoryPath != "" {
		f, err := os.Create(opts.HistoryPath)
		return opts.HistoryPath, f, err
	}
	dir := r.HistoryDir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(s.Name)
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s-seed%d-*.jsonl", name, opts.Seed))
	if err != nil {
		return "", nil, err
	}
	return filepath.Clean(f.Name()), f, nil
}

func recordEffects(ctx context.Context, ora oracle.Oracle, rec *driver.Recorder, seen map[string]bool, named *acks) error {
	if ora == nil {
		return nil
	}
	fx, err := ora.Effects(ctx)
	if err != nil {
		return err
	}
	for _, e := range fx {
		// An effect is one (tenant, id): services number orders per tenant,
		// so the same id under two tenants is two effects.
		id := e.Tenant + "\x00" + e.ID
		if seen[id] {
			continue
		}
		seen[id] = true
		if e.Intent == "" {
			e.Intent = named.intentOf(e.Tenant, e.ID)
		}
		if err := rec.Effect(e.Tenant, e.Key, e.Intent, e.ID, e.Kind); err != nil {
			return err
		}
	}
	return nil
}

func loadHistory(path string, opts history.LoadOptions) (*history.History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return history.Load(f, opts)
}

func expectOf(st scenarios.Step) string {
	if st.Expect == "" {
		return "clean"
	}
	return st.Expect
}

// expectationMet: "clean" wants no violation and no unknown; an invariant
// name wants that invariant violated.
func expectationMet(expect string, r checkers.Result) bool {
	if expect == "clean" {
		return r.Verdict == checkers.Pass
	}
	for _, p := range r.Results {
		if p.Name == expect && p.Verdict == checkers.Violated {
			return true
		}
	}
	return false
}

func stepPrefix(i int) string {
	if i == 0 {
		return ""
	}
	return fmt.Sprintf("s%d", i+1)
}

// runNonce is a short random tag for one run against a user's service.
func runNonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nothingSucceeded explains a history in which no attempt got a 2xx, or
// returns "". Such a run proves nothing about idempotency.
func nothingSucceeded(h *history.History) string {
	if len(h.Attempts) == 0 {
		return "no request was sent"
	}
	statuses := map[string]int{}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if a.Outcome == history.OK && a.Status/100 == 2 {
			return ""
		}
		k := a.Outcome.String()
		if a.Outcome == history.OK {
			k = strconv.Itoa(a.Status)
		}
		statuses[k]++
	}
	keys := make([]string, 0, len(statuses))
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %s", statuses[k], k)
	}
	return fmt.Sprintf("no request succeeded (%s), so nothing was judged: check the endpoint's path, body and tokens", strings.Join(parts, ", "))
}

// LookupMutant returns the reference's mutant of that name; "" and
// [CorrectService] are the correct service (a zero Mutant). An unknown name
// is an error that suggests the closest one.
func LookupMutant(name string) (reference.Mutant, error) {
	if name == CorrectService {
		name = ""
	}
	return reference.LookupMutant(name)
}

// CheckMutant refuses an unknown mutant name before anything starts.
func CheckMutant(name string) error {
	_, err := LookupMutant(name)
	return err
}
