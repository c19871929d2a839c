package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// session is one run's history as it is written: the file and its meta
// line, the recorder every event goes through, the world the faults act
// on, and the oracle the effects are read with. Every step of the run
// writes to it.
type session struct {
	path   string
	f      *os.File
	meta   *metaLine
	rec    *driver.Recorder
	world  *world
	oracle oracle.Oracle
	named  *acks
	// attrib attributes effects to intents: the acks, or a client step's
	// fault proxy (what each listener's upstream answers named).
	attrib   intentNamer
	gate     *addrgate.Gate
	recorded map[string]string // effects already in the history, with the state last recorded of each
	// states says the run judges forward-only: only then are the states
	// the oracle read written into the history.
	states bool
	load   history.LoadOptions
	// reference says the target is the bundled reference, whose handlers
	// are counted: the effects are read once none runs. Otherwise settle
	// is the scenario's effects.settle (see settleFor).
	reference bool
	settle    time.Duration
	metrics   *http.Client // the reference's in-flight gauge, through the gate
	// lastInfo is when the last attempt that ended info ended (run ns),
	// and open counts those attempts, but the ones a response-drop cut:
	// that fault lets the service answer first, so its work is done.
	lastInfo atomic.Int64
	open     atomic.Int64
	mu       sync.Mutex
	dropped  map[int64]bool // ops a response-drop cut
	// stopFlush ends the loop that flushes the history as the run goes.
	stopFlush chan struct{}
}

// openSession creates the run's history (its meta line first) against the
// started target t.
func (r *Runner) openSession(rp *runPlan, t *sut.Target, opts RunOptions) (*session, error) {
	path, f, err := r.historyFile(rp.name, opts)
	if err != nil {
		return nil, err
	}
	ora := oracleFor(r.gate(), rp.effects, rp.target.Target.Reference, rp.tenants, t.DSN, t.HasConsumer())
	begun := time.Now()
	meta, err := writeMeta(f, rp.name, opts.Seed, begun, rp.contract, rp.invariants, ora != nil, rp.clientContract)
	if err != nil {
		f.Close()
		return nil, err
	}
	rec := driver.NewRecorderAt(history.NewWriter(f), begun)
	if r.OnEvent != nil {
		rec.OnEvent(r.OnEvent)
	}
	if rp.named != nil {
		rec.OnEvent(rp.named.event)
	}
	w := &world{proxies: r.env.Proxies(), t: t, hooks: rp.hooks, rec: rec, rng: newLockedRand(opts.Seed)}
	if sb := r.env.Standby(); sb != nil && rp.standby {
		w.standby = sb
	}
	s := &session{path: path, f: f, meta: meta, rec: rec, world: w, oracle: ora, named: rp.named, attrib: rp.named, gate: r.gate(),
		recorded: map[string]string{}, states: slices.Contains(rp.invariants, "forward-only"), load: rp.load, stopFlush: make(chan struct{}),
		reference: rp.effects.Oracle == "reference", settle: rp.effects.Settle}
	if s.reference {
		s.metrics = r.gate().HTTPClient("the reference's /metrics", 5*time.Second)
	}
	s.dropped = map[int64]bool{}
	rec.OnEvent(func(e *history.Event) {
		switch {
		case e.Type == history.TypeFault && e.Fault == "response-drop" && e.Op != 0:
			s.mu.Lock()
			s.dropped[e.Op] = true
			s.mu.Unlock()
		case e.Type == history.TypeInfo:
			s.mu.Lock()
			cut := s.dropped[e.Op]
			s.mu.Unlock()
			if !cut {
				s.open.Add(1)
				s.lastInfo.Store(e.NS)
			}
		}
	})
	// Flush as the run goes, so the file can be followed while it runs and
	// a run killed outright still leaves most of its history.
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stopFlush:
				return
			case <-t.C:
				_ = rec.Flush()
			}
		}
	}()
	return s, nil
}

// close ends the history. A run cut short leaves a partial history: it
// says so, so that a later check reads unknown, never a violation.
func (s *session) close(ctx context.Context) {
	close(s.stopFlush)
	if ctx.Err() != nil {
		_ = s.rec.Interrupted(context.Cause(ctx).Error())
	}
	_ = s.rec.Flush()
	s.f.Close()
}

// plan is step st's plan; prev is the previous step's.
func (s *session) plan(st *stepPlan, prev Plan) (Plan, error) {
	if ws := st.webhook; ws != nil && st.given == nil {
		if ws.secretErr != nil {
			return Plan{}, fmt.Errorf("%w: %w", ErrSetup, ws.secretErr)
		}
		if err := s.rec.Flush(); err != nil {
			return Plan{}, err
		}
		p, err := ws.stepPlan(st, s.path)
		if err != nil {
			return Plan{}, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		return p, nil
	}
	if st.given != nil || st.callbacks == nil {
		return st.draw(prev), nil
	}
	// Callbacks are for the orders the history so far shows created.
	if err := s.rec.Flush(); err != nil {
		return Plan{}, err
	}
	p, err := callbackPlan(s.path, st.endpointPath, *st.callbacks, st.seed)
	if err != nil {
		return Plan{}, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return withFaults(p, st.faults), nil
}

// begin records that step st begins, with its name and expectation:
// everything recorded until the next step is its own.
func (s *session) begin(st *stepPlan) error {
	return s.rec.Write(&history.Event{Type: history.TypeStep, Name: st.name, Expect: st.expect})
}

// step sends the step's plan with its faults and records the effects the
// service produced (and a request budget that ran out).
func (s *session) step(ctx context.Context, st *stepPlan, plan Plan) (driver.Stats, error) {
	// Until this step's effects are read, the history says they are
	// not: a run interrupted now keeps a history that cannot be judged
	// on effects, rather than one that claims none were made.
	if err := s.meta.set(false); err != nil {
		return driver.Stats{}, err
	}
	var (
		stats      driver.Stats
		stopFaults = func() error { return nil }
		err        error
	)
	if st.client != nil {
		stats, err = s.clientStep(ctx, st, plan)
	} else {
		stats, stopFaults, err = sendStep(ctx, s.world, st, plan)
	}
	if err == nil && stats.Budget {
		// Attempts the budget stopped were never judged: the history
		// says so, and the step cannot pass on the part that ran.
		err = s.rec.Write(&history.Event{Type: history.TypeBudget, MaxRequests: int64(st.traffic.MaxRequests)})
	}
	if err == nil {
		err = s.readEffects(ctx, st)
		if err != nil && ctx.Err() == nil {
			// A target that answered none of the run's attempts explains
			// an oracle that then could not read it either (a
			// single-threaded service held by one kept-open connection,
			// say): the target is the finding, the oracle's failure its
			// echo.
			if why := s.neverAnswered(); why != "" {
				err = fmt.Errorf("%s; the effect oracle's read then failed too: %w", why, err)
			}
		}
	}
	if err == nil && ctx.Err() == nil {
		if err = s.rec.Flush(); err == nil {
			err = s.meta.set(true)
		}
	}
	if ferr := stopFaults(); err == nil {
		err = ferr
	}
	if err != nil {
		if !errors.Is(err, ErrSetup) {
			err = fmt.Errorf("%w: %w", ErrSetup, err)
		}
		return stats, err
	}
	return stats, s.rec.Flush()
}

// neverAnswered says why the history so far is one whose target answered
// none of its attempts ([unanswered]), or "".
func (s *session) neverAnswered() string {
	if s.rec.Flush() != nil {
		return ""
	}
	h, err := loadHistory(s.path, s.load)
	if err != nil {
		return ""
	}
	return unanswered(h)
}

func (r *Runner) historyFile(scenario string, opts RunOptions) (string, *os.File, error) {
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
	name := strings.NewReplacer("/", "_", " ", "_").Replace(scenario)
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s-seed%d-*.jsonl", name, opts.Seed))
	if err != nil {
		return "", nil, err
	}
	return filepath.Clean(f.Name()), f, nil
}

// intentNamer attributes an effect (tenant, id) to the intent that made
// it, "" when it cannot.
type intentNamer interface {
	intentOf(tenant, id string) string
}

// readEffects reads the step's effects once the service has quiesced, and
// records when it had (a settled event) so that a check of the history
// holds a timed-out attempt open as long as the run did. The reference's
// in-flight handlers are counted, so it is read as soon as none runs; a
// user's service is read after its settle (settleFor) and once two reads
// agree.
func (s *session) readEffects(ctx context.Context, st *stepPlan) error {
	if s.oracle == nil {
		return nil
	}
	if s.reference {
		if s.open.Swap(0) > 0 && referenceQuiesce(ctx, s.metrics, s.world.t.ServiceURL) {
			if err := s.rec.Write(&history.Event{Type: history.TypeSettled}); err != nil {
				return err
			}
		}
		read, err := oracle.Read(ctx, s.oracle)
		if err != nil {
			return err
		}
		return recordEffects(read, s.rec, s.recorded, s.attrib, s.states)
	}
	wait := settleFor(s.settle, s.open.Swap(0), st.driver.Timeout)
	if s.settle <= 0 && wait > 0 {
		// The default settle counts from the last timeout: work that
		// has run one more timeout since is done or stuck.
		wait = max(wait-time.Duration(s.rec.Now()-s.lastInfo.Load()), 0)
	} else if wait <= 0 {
		read, err := oracle.Read(ctx, s.oracle)
		if err != nil {
			return err
		}
		return recordEffects(read, s.rec, s.recorded, s.attrib, s.states)
	}
	read, end, err := settleRead(ctx, s.oracle, s.rec, wait)
	if err != nil {
		return err
	}
	if err := s.rec.Write(&history.Event{Type: history.TypeSettled, NS: end}); err != nil {
		return err
	}
	return recordEffects(read, s.rec, s.recorded, s.attrib, s.states)
}

// recordEffects writes one read of the oracle into the history: where it
// read, then each effect not recorded before, and a state event for an
// effect recorded before whose resource is now read in another state.
func recordEffects(read oracle.Reading, rec *driver.Recorder, seen map[string]string, named intentNamer, states bool) error {
	// Where it read and what came back: an oracle that reads nothing at
	// all, while requests were acknowledged, reads the wrong place.
	if err := rec.Write(&history.Event{Type: history.TypeOracle, Source: read.Source, Read: len(read.Effects), Got: read.Got}); err != nil {
		return err
	}
	for _, e := range read.Effects {
		// An effect is one (tenant, id): services number orders per tenant,
		// so the same id under two tenants is two effects.
		id := e.Tenant + "\x00" + e.ID
		if !states {
			e.State, e.Resource, e.WrittenAt = "", "", time.Time{}
		}
		state := ""
		if e.State != "" {
			state = e.State + "\x00" + e.WrittenAt.UTC().Format(time.RFC3339Nano)
		}
		if last, ok := seen[id]; ok {
			if state == "" || state == last {
				continue
			}
			// The same effect, its resource moved on: not a second effect.
			seen[id] = state
			if err := rec.Write(&history.Event{Type: history.TypeState, Tenant: e.Tenant, Resource: cmp.Or(e.Resource, e.ID), State: e.State, WrittenAt: e.WrittenAt}); err != nil {
				return err
			}
			continue
		}
		seen[id] = state
		if e.Intent == "" {
			e.Intent = named.intentOf(e.Tenant, e.ID)
		}
		if err := rec.RecordEffect(e); err != nil {
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
