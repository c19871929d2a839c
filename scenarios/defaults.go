package scenarios

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
)

// The defaults the loader fills in, as docs/scenarios.md documents them.
const (
	defaultMethod    = http.MethodPost
	defaultPath      = "/v1/orders"
	defaultKeyHeader = "Idempotency-Key"
	defaultProfile   = "ietf"
	defaultClient    = "correct"
	// defaultTenantHeader and defaultTenantParam name the tenant for
	// tenant.in header and query.
	defaultTenantHeader = "X-Tenant"
	defaultTenantParam  = "tenant"
	// defaultDecisionBound is eventually-decided's default bound (the
	// checkers' default, 5s).
	defaultDecisionBound = 5 * time.Second
	// defaultBody is the body template when a scenario sets none.
	defaultBody = `{"sku":"{{sku}}","qty":{{qty}},"amount":{{amount}}}`
)

// defaultTraffic is the traffic of a scenario that says nothing about it.
var defaultTraffic = Traffic{
	Intents: 20, Tenants: 2, Concurrency: 8, Spread: 200 * time.Millisecond,
	Client: defaultClient,
	Retry: Retry{
		MaxAttempts: 40, Base: 25 * time.Millisecond, Max: 500 * time.Millisecond,
		MaxRetryAfter: 2 * time.Second,
	},
	Timeout: 2 * time.Second, Deadline: 30 * time.Second, MaxRequests: 2000,
}

// fillDefaults fills every field a file left unset; see the field docs.
func (s *Scenario) fillDefaults(file string) {
	if s.Name == "" {
		s.Name = defaultName(file)
	}
	for i := range s.Steps {
		// The secret is read once, where the scenario is loaded, as its
		// addresses are: the endpoint's process has the same variable.
		if w := s.Steps[i].Webhook; w != nil && w.Secret == "" {
			w.Secret = os.Getenv(or(w.SecretEnv, DefaultWebhookSecretEnv))
		}
	}
	e := &s.Endpoint
	e.Method = or(e.Method, defaultMethod)
	e.Path = or(e.Path, defaultPath)
	e.KeyHeader = or(e.KeyHeader, defaultKeyHeader)
	if e.Body == "" {
		e.Body = defaultBody
	}
	if !hasHeader(e.Headers, "Content-Type") {
		if e.Headers == nil {
			e.Headers = map[string]string{}
		}
		e.Headers["Content-Type"] = "application/json"
	}
	tenants := 0
	if len(e.Tokens) > 0 {
		tenants = len(e.Tokens)
	}
	s.Traffic.fill(tenants)
	need := s.Traffic.Tenants
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Traffic == nil {
			st.Traffic = new(Traffic)
			*st.Traffic = s.Traffic
		}
		st.Traffic.fill(tenants)
		need = max(need, st.Traffic.Tenants)
		if st.Name == "" {
			st.Name = fmt.Sprintf("step-%d", i+1)
		}
		if st.Expect == "" {
			st.Expect = "clean"
		}
		fillWhen(st.Faults)
	}
	e.Tenant.In = or(e.Tenant.In, TenantInToken)
	switch e.Tenant.In {
	case TenantInHeader:
		e.Tenant.Name = or(e.Tenant.Name, defaultTenantHeader)
	case TenantInQuery:
		e.Tenant.Name = or(e.Tenant.Name, defaultTenantParam)
	}
	// Tokens are made up only for services that tell tenants by them: a
	// service that reads the tenant elsewhere gets no Authorization header
	// it did not ask for.
	if len(e.Tokens) == 0 && e.Tenant.In == TenantInToken {
		e.Tokens = make(map[string]string, need)
		for i := 1; i <= need; i++ {
			e.Tokens[fmt.Sprintf("t%d", i)] = fmt.Sprintf("tok-t%d", i)
		}
	}
	s.Contract.fill()
	fillWhen(s.Faults)
	if r := s.Target.Reference; r != nil {
		r.Lease = orDur(r.Lease, time.Second)
		r.Retention = orDur(r.Retention, 24*time.Hour)
		r.RetryWindow = orDur(r.RetryWindow, time.Hour)
		r.VisibilityTimeout = orDur(r.VisibilityTimeout, time.Second)
		if s.Effects.Oracle == "" {
			s.Effects.Oracle = "reference"
		}
	}
	if c := s.Client; c != nil {
		c.fill()
		if len(s.Invariants) == 0 {
			// The client invariants registered in this build: a client
			// scenario never judges the server's.
			for _, n := range checkers.SuiteNames(checkers.SuiteClient) {
				s.Invariants = append(s.Invariants, Invariant{Name: n})
			}
		}
	}
	if s.Broker != nil {
		s.Broker.AckWait = orDur(s.Broker.AckWait, time.Second)
		if s.Consumer != nil && s.Consumer.Instances == 0 {
			s.Consumer.Instances = 1
		}
		if len(s.Invariants) == 0 { // a consumer's two, not a service's seven
			s.Invariants = []Invariant{{Name: "exactly-once"}, {Name: "no-lost-message"}}
			if s.Messages != nil && s.Messages.Fault == MessageFaultPoisonMessage {
				// A poison message is judged by its redeliveries too.
				s.Invariants = append(s.Invariants, Invariant{Name: "bounded-redelivery"})
			}
		}
	}
	if len(s.Invariants) == 0 && s.Client == nil {
		for _, n := range checkers.Names() {
			s.Invariants = append(s.Invariants, Invariant{Name: n})
		}
	}
	// A client that gives up before the decision bound leaves every slow
	// key undecidable: retry until a decision is overdue.
	budget := s.DecisionBound() + 2*time.Second
	s.Traffic.Retry.Budget = orDur(s.Traffic.Retry.Budget, budget)
	for i := range s.Steps {
		s.Steps[i].Traffic.Retry.Budget = orDur(s.Steps[i].Traffic.Retry.Budget, budget)
	}
}

// DecisionBound is eventually-decided's bound: the scenario's, or the
// checkers' default.
func (s *Scenario) DecisionBound() time.Duration {
	for _, inv := range s.Invariants {
		if inv.Name == "eventually-decided" && inv.Bound > 0 {
			return inv.Bound
		}
	}
	return defaultDecisionBound
}

// fill sets the unset fields of a traffic; tokens is the number of tenant
// tokens the endpoint names (0: none), the default tenant count.
func (tr *Traffic) fill(tokens int) {
	d := defaultTraffic
	if tokens > 0 {
		d.Tenants = tokens
	}
	tr.Intents = orInt(tr.Intents, d.Intents)
	tr.Tenants = orInt(tr.Tenants, d.Tenants)
	tr.Concurrency = orInt(tr.Concurrency, d.Concurrency)
	tr.Spread = orDur(tr.Spread, d.Spread)
	tr.Client = or(tr.Client, d.Client)
	tr.Retry.MaxAttempts = orInt(tr.Retry.MaxAttempts, d.Retry.MaxAttempts)
	tr.Retry.Base = orDur(tr.Retry.Base, d.Retry.Base)
	tr.Retry.Max = orDur(tr.Retry.Max, d.Retry.Max)
	tr.Retry.MaxRetryAfter = orDur(tr.Retry.MaxRetryAfter, d.Retry.MaxRetryAfter)
	tr.Timeout = orDur(tr.Timeout, d.Timeout)
	tr.Deadline = orDur(tr.Deadline, d.Deadline)
	tr.MaxRequests = orInt(tr.MaxRequests, d.MaxRequests)
}

// fill resolves the profile: custom when codes were given without one or
// the service refuses every repeat, and the codes of a built-in profile.
func (c *Contract) fill() {
	if c.Repeat == checkers.RepeatRefuse {
		// Every repeat gets the refusal: reuse and in flight are it,
		// unless the team's contract names them.
		c.Profile = "custom"
		c.MissingKey = orInt(c.MissingKey, checkers.DefaultProfile().MissingKey)
		c.Reuse = orInt(c.Reuse, c.RepeatStatus)
		c.InFlight = orInt(c.InFlight, c.RepeatStatus)
		return
	}
	if c.Profile == "" {
		c.Profile = defaultProfile
		if c.MissingKey != 0 || c.Reuse != 0 || c.InFlight != 0 {
			c.Profile = "custom"
		}
	}
	if p, err := checkers.ProfileByName(c.Profile); err == nil {
		c.MissingKey, c.Reuse, c.InFlight = p.MissingKey, p.Reuse, p.InFlight
	}
}

func fillWhen(fs []FaultSpec) {
	for i := range fs {
		fs[i].When.Attempt = orInt(fs[i].When.Attempt, 1)
	}
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if http.CanonicalHeaderKey(k) == name {
			return true
		}
	}
	return false
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

func orDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// fill sets a client block's defaults.
func (c *Client) fill() {
	c.Intents = orInt(c.Intents, 20)
	c.Concurrency = orInt(c.Concurrency, 8)
	c.Timeout = orDur(c.Timeout, 30*time.Second)
	k := &c.Contract
	k.Budget = orInt(k.Budget, 5)
	if k.RetryStatuses == nil {
		k.RetryStatuses = []int{408, 425, 429, 500, 502, 503, 504}
	}
	if k.PermanentStatuses == nil {
		k.PermanentStatuses = []int{400, 401, 403, 404, 422}
	}
	k.Jitter = or(k.Jitter, "required")
	k.Unknown = or(k.Unknown, "allowed")
}
