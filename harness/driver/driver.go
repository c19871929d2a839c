package driver

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/ctxwait"
)

// Intent is one thing a client means to do once. Two intents may carry
// byte-identical bodies: a user really buying twice.
type Intent struct {
	ID     string
	Tenant string
	Key    string // "" sends no key header
	Method string
	// Path and Body are the request as sent by the first attempt. With
	// Vars set, every attempt renders its own from [Config.Template].
	Path string
	Body []byte
	// Vars are the values drawn for the template's placeholders (n, sku,
	// qty, amount, uuid); intent, tenant and key come from the attempt.
	Vars map[string]string `json:",omitempty"`
	// Variant changes the rendered body (see [ApplyVariant]): a
	// re-serialised or retyped payload.
	Variant string `json:",omitempty"`
	// At is when the intent starts, from the start of the run.
	At time.Duration
	// Clicks > 1 sends that many copies of the first attempt (a double
	// click), released within Spread.
	Clicks int
	Spread time.Duration
	// Together sends the copies so that they reach the service at once:
	// each on an open connection, written up to its last byte, then all
	// last bytes back to back (Spread is not used).
	Together bool `json:",omitempty"`
	// Faults aims faults at attempts of this intent: attempt number → fault
	// name. The [Router] makes them real.
	Faults map[int]string
	Client int
	// Resource and State say which resource the request asks to move to
	// which state (a payment provider's "payment pay_1 paid" event): the
	// invoke events carry them, and forward-only reads them.
	Resource string `json:",omitempty"`
	State    string `json:",omitempty"`
	// Forged marks a request whose signature [Config.Sign] forges (a
	// webhook event signed with a wrong secret); Once sends it a single
	// time, never retried.
	Forged bool `json:",omitempty"`
	Once   bool `json:",omitempty"`
	_      struct{}
}

// AttemptInfo describes an attempt about to be sent, for a [Router].
type AttemptInfo struct {
	Op      int64
	Intent  *Intent
	Attempt int    // 1-based attempt number
	Click   int    // 0 for the original, 1.. for double-click copies
	Key     string // the key this attempt carries
	// Fault is the fault the plan aims at this attempt, "" for none.
	Fault string
	// sent is the request as rendered, once it is.
	sent *Rendered
}

// Route is the path one attempt takes.
type Route struct {
	// BaseURL replaces the target's base URL for this attempt ("" keeps it).
	BaseURL string
	// Fresh sends the attempt on its own new connection, closed afterwards,
	// so that a fault on that path hits this attempt alone.
	Fresh bool
	// Done is called once the attempt has completed (to tear the path down).
	Done func()
}

// Router chooses the path of each attempt; faults implement it to aim at
// single attempts.
type Router interface {
	Route(ctx context.Context, a AttemptInfo) (Route, error)
}

// Config is what the driver needs besides the intents.
type Config struct {
	// BaseURL of the service (usually the harness's proxy in front of it).
	BaseURL string
	// Tokens maps a tenant to its bearer token.
	Tokens map[string]string
	// KeyHeader is the idempotency key header (default "Idempotency-Key").
	KeyHeader string
	// Headers are sent on every request (e.g. Content-Type) when there is
	// no Template.
	Headers map[string]string
	// Template renders every attempt's path, headers and body from its
	// intent, tenant and key (intents with Vars); nil sends intents as
	// written, with Headers.
	Template *Template
	// IntentHeader, if set, carries the intent id on every request, for
	// services that can record it (the reference does).
	IntentHeader string
	// Concurrency bounds intents in flight at once (default 8).
	Concurrency int
	// MaxRequests bounds the attempts of the whole run (default 10,000).
	MaxRequests int
	// Deadline bounds the whole run (default 60s).
	Deadline time.Duration
	// Timeout bounds one attempt (default 2s).
	Timeout time.Duration
	Model   Model
	Retry   RetryPolicy
	// InFlightStatus is the status the service uses for "still processing"
	// (default 409); the correct client retries it when Retry-After is set.
	InFlightStatus int
	// RefuseStatus, when set, is the status of a service that refuses every
	// repeat of a key (contract repeat: refuse): a final answer, never
	// retried (but by the retry-4xx client, whose mistake that is).
	RefuseStatus int
	// Seed makes backoff jitter reproducible: each intent draws from its own
	// source derived from Seed and its id, so concurrency cannot reorder draws.
	Seed     int64
	Recorder *Recorder
	Router   Router
	// DecisionBound, when set with Settled, also ends an intent's retries
	// once its key is overdue: asked for this long since the first attempt
	// eventually-decided counts (sent after the latest heal, no fault aimed
	// at it) without a definite answer, with no heal to come. The checker's
	// verdict on the key is then a violation whatever follows, so more
	// retries only spend time (see overdue.go). 0 leaves retries to
	// [RetryPolicy].
	DecisionBound time.Duration
	// Settled reports that no fault can heal any more before the traffic
	// ends; the harness knows when its timed faults have run their course.
	Settled func() bool
	// Dial, when set, makes every connection the driver opens (the
	// harness passes its address gate, so that even its own proxies'
	// addresses are checked); nil dials directly.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Sign, when set, signs every attempt as it is sent: it returns the
	// header (name and value) computed over the body the attempt carries
	// (a payment provider's HMAC over timestamp and body, made again for
	// each delivery).
	Sign func(in *Intent, body []byte) (name, value string)
	// Upstream, when set, is asked about an attempt that had a connection
	// but no status: it says why the harness's own proxy (remote) did not
	// connect that connection (local, dialled at dialed) to the service,
	// or "". Behind the proxy a refused or full service looks like a taken
	// connection that closed or stayed silent; this lets the attempt say
	// "no connection was made", which eventually-decided reads as capacity.
	Upstream func(local, remote string, dialed time.Time) string
	_        struct{}
}

// Stats counts what a run sent and got.
type Stats struct {
	Intents  int
	Requests int64
	OK       int64
	Info     int64
	Fail     int64
	// Budget says the run hit MaxRequests; Deadline that it hit the deadline.
	Budget   bool
	Deadline bool
	Elapsed  time.Duration
}

func (c *Config) withDefaults() error {
	if c.BaseURL == "" {
		return fmt.Errorf("%w: no base URL", ErrConfig)
	}
	if c.Recorder == nil {
		return fmt.Errorf("%w: no recorder", ErrConfig)
	}
	if c.KeyHeader == "" {
		c.KeyHeader = "Idempotency-Key"
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.MaxRequests <= 0 {
		c.MaxRequests = 10000
	}
	if c.Deadline <= 0 {
		c.Deadline = time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Second
	}
	if c.Model == "" {
		c.Model = Correct
	}
	if c.InFlightStatus == 0 {
		c.InFlightStatus = http.StatusConflict
	}
	c.Retry = c.Retry.withDefaults()
	if c.Template == nil {
		c.Template = &Template{Headers: c.Headers}
	}
	return validModel(c.Model)
}

// Run sends every intent and records every attempt. It returns when all
// intents are done, the budget or the deadline is reached, or ctx ends;
// attempts still in flight then are recorded as info.
func Run(ctx context.Context, cfg Config, intents []Intent) (Stats, error) {
	if err := cfg.withDefaults(); err != nil {
		return Stats{}, err
	}
	if err := checkURLs(cfg, intents); err != nil {
		return Stats{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	d := &runner{cfg: cfg, pool: newPool(cfg.Concurrency*4, cfg.Dial), targets: targets{m: map[targetKey]target{}},
		scratch: sync.Pool{New: func() any { return &scratch{out: make([]byte, 0, 1024)} }},
		static:  fieldsOf(cfg.Template.Headers), keyHeader: http.CanonicalHeaderKey(cfg.KeyHeader), bearer: map[string]string{}}
	if cfg.IntentHeader != "" {
		d.intentHeader = http.CanonicalHeaderKey(cfg.IntentHeader)
	}
	for tenant, tok := range cfg.Tokens {
		d.bearer[tenant] = "Bearer " + tok
	}
	if cfg.DecisionBound > 0 {
		d.shared = sharedKeys(intents)
	}
	defer d.pool.close()
	// The run's end interrupts the requests in flight.
	defer context.AfterFunc(ctx, d.pool.close)()

	order := make([]*Intent, len(intents))
	for i := range intents {
		order[i] = &intents[i]
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].At < order[j].At })

	// Each worker takes the next intent in order of start and waits for
	// its time: no hand-over from a feeding goroutine, which would cost a
	// wake-up per intent.
	start := time.Now()
	var next, started atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(order)) || ctx.Err() != nil {
					return
				}
				in := order[i]
				if wait := in.At - time.Since(start); wait > 0 && !ctxwait.Sleep(ctx, wait) {
					return
				}
				started.Add(1)
				d.intent(ctx, in)
			}
		}()
	}
	wg.Wait()
	d.stats.Intents = int(started.Load())
	st := d.snapshot()
	st.Elapsed = time.Since(start)
	st.Deadline = ctx.Err() == context.DeadlineExceeded
	if err := cfg.Recorder.Flush(); err != nil {
		return st, err
	}
	return st, nil
}

// checkURLs refuses, before anything is sent, an intent whose URL cannot
// be built: every attempt of it would fail the same way.
func checkURLs(cfg Config, intents []Intent) error {
	seen := map[string]bool{}
	for i := range intents {
		in := &intents[i]
		if seen[in.Method+" "+in.Path] {
			continue
		}
		seen[in.Method+" "+in.Path] = true
		u := strings.TrimRight(cfg.BaseURL, "/") + in.Path
		if _, err := http.NewRequest(in.Method, u, nil); err != nil {
			return fmt.Errorf("%w: intent %s: %s %q: %v", ErrConfig, in.ID, in.Method, in.Path, err)
		}
		// What the driver itself cannot send (another scheme, no host).
		if _, err := parseTarget(u); err != nil {
			return fmt.Errorf("%w: intent %s: %s %q: %v", ErrConfig, in.ID, in.Method, in.Path, err)
		}
	}
	return nil
}

type runner struct {
	cfg Config
	// pool keeps the connections alive between attempts; targets caches
	// parsed URLs; scratch holds what attempts build and record.
	pool    *pool
	targets targets
	scratch sync.Pool
	// static are the template's own header fields, when attempts do not
	// render their own; keyHeader and intentHeader are canonical names;
	// bearer is each tenant's Authorization value.
	static                  history.Headers
	keyHeader, intentHeader string
	bearer                  map[string]string
	shared                  map[string]bool // keys of several intents (see overdueable)
	sent                    atomic.Int64
	ok                      atomic.Int64
	info                    atomic.Int64
	fail                    atomic.Int64
	budget                  atomic.Bool
	stats                   Stats
}

func (d *runner) snapshot() Stats {
	st := d.stats
	st.Requests, st.OK, st.Info, st.Fail, st.Budget = d.sent.Load(), d.ok.Load(), d.info.Load(), d.fail.Load(), d.budget.Load()
	return st
}

// take reserves one request from the run's budget.
func (d *runner) take() bool {
	if d.sent.Add(1) > int64(d.cfg.MaxRequests) {
		d.sent.Add(-1)
		d.budget.Store(true)
		return false
	}
	return true
}

// intent runs one intent to its end: the first attempt (with its double-click
// copies), then retries as the client model dictates.
func (d *runner) intent(ctx context.Context, in *Intent) {
	// The intent's own source, made only when a draw is needed: most
	// intents end at their first answer.
	var rng *rand.Rand
	draw := func() *rand.Rand {
		if rng == nil {
			h := fnv.New64a()
			h.Write([]byte(in.ID))
			rng = rand.New(rand.NewPCG(uint64(d.cfg.Seed), h.Sum64()))
		}
		return rng
	}
	var first time.Time
	var clock *keyClock
	if d.overdueable(in) {
		clock = &keyClock{}
	}
	for n := 1; n <= d.cfg.Retry.MaxAttempts; n++ {
		var res result
		sent := time.Now()
		if n == 1 {
			first = sent
		}
		if n == 1 && in.Clicks > 1 {
			res = d.clicks(ctx, in, draw(), clock)
		} else {
			res = d.attempt(ctx, in, n, 0, nil)
			if clock != nil {
				clock.add(res, d.cfg.InFlightStatus)
			}
		}
		// Bounded in count and in time: the budget ends the retries once an
		// attempt went out that late, so the last ask is never early; and
		// an overdue key is judged already.
		if res.stop || in.Once || !d.cfg.Model.retryable(res.status, d.cfg.InFlightStatus, d.cfg.RefuseStatus) || n == d.cfg.Retry.MaxAttempts || sent.Sub(first) >= d.cfg.Retry.Budget ||
			clock != nil && d.overdue(clock) {
			return
		}
		if !ctxwait.Sleep(ctx, d.cfg.Retry.backoff(draw(), n, res.retryAfter)) {
			return
		}
	}
}

// clicks sends the copies of a double click, released within the spread;
// the intent continues from the best answer among them. Each copy is noted
// on clock (when not nil).
func (d *runner) clicks(ctx context.Context, in *Intent, rng *rand.Rand, clock *keyClock) result {
	delays := make([]time.Duration, in.Clicks)
	for i := 1; i < in.Clicks; i++ {
		if in.Spread > 0 {
			delays[i] = time.Duration(rng.Int64N(int64(in.Spread) + 1))
		}
	}
	var g *gate
	if in.Together {
		g = newGate(in.Clicks)
		clear(delays)
	}
	results := make([]result, in.Clicks)
	var wg sync.WaitGroup
	for i := range delays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ctxwait.Sleep(ctx, delays[i]) {
				results[i] = d.attempt(ctx, in, 1, i, g)
			} else {
				if g != nil {
					g.leave(i)
				}
				results[i] = result{stop: true}
			}
		}()
	}
	wg.Wait()
	if clock != nil {
		for _, r := range results {
			clock.add(r, d.cfg.InFlightStatus)
		}
	}
	best := results[0]
	for _, r := range results[1:] {
		if r.status >= 200 && r.status < 300 {
			best = r
		}
	}
	return best
}
