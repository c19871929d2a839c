package reference

import (
	"fmt"
	"maps"
	"net/netip"
	"time"
)

// Config configures [Serve]. The zero value of every field but DSN has a
// usable default (see [Config.withDefaults]).
type Config struct {
	// DSN is the primary Postgres connection string. Required.
	DSN string
	// ReplicaDSN is a (possibly lagging) standby. Only the replica-read
	// mutant reads from it: the correct service makes every idempotency
	// decision on the primary (seed 000 §四: 幂等查询走强一致读).
	ReplicaDSN string
	// Addr is the listen address. Default "127.0.0.1:8080". With port 0
	// the chosen address is reported through Ready, AddrFile and the
	// "listening" log line.
	Addr string
	// AddrFile, when set, receives the listen address (written atomically:
	// temp file + rename) once the listener is open.
	AddrFile string
	// Ready, when set, is called once with the listen address after the
	// listener is open and before the first request is served.
	Ready func(addr string)
	// Mutant names at most one deviation from [Mutants]; empty is the
	// correct service.
	Mutant string
	// Retention is how long key records are kept. Default 24h. Must be at
	// least MaxRetryWindow or [Serve] refuses to start.
	Retention time.Duration
	// MaxRetryWindow is the longest span over which clients may retry one
	// intent. Default 1h.
	MaxRetryWindow time.Duration
	// Lease bounds how long a 'processing' record blocks duplicates before
	// another attempt may take over (its holder presumably died).
	// Default 30s.
	Lease time.Duration
	// PurgeInterval is how often expired key records are deleted.
	// Default 1m.
	PurgeInterval time.Duration
	// RequestTimeout bounds the database work of one request. Work is
	// detached from the client's connection (a client hanging up must not
	// leave half-done claims behind), so this is its only bound.
	// Default 30s.
	RequestTimeout time.Duration
	// Failpoints enables the /debug/ endpoints (loopback clients only).
	Failpoints bool
	// DebugAllow are networks whose clients the /debug/ endpoints also
	// answer: a container's private network, which the harness reaches it
	// from. Default none.
	DebugAllow []netip.Prefix
	// Tokens maps bearer token → tenant. Default [DefaultTokens].
	Tokens map[string]string
	// ProviderToken authenticates the simulated payment provider's
	// callbacks. Default "tok-provider".
	ProviderToken string
	// ProviderSecret is the secret the provider signs each callback with
	// (HMAC-SHA256 over timestamp and body, the Webhook-Signature header,
	// see [SignCallback]). Default [DefaultProviderSecret].
	ProviderSecret string
	// InitialBalance is the balance each configured tenant's account
	// starts with (created once; existing balances are left alone).
	// Default 1e12.
	InitialBalance int64
	// MaxConns sizes the primary connection pool. Default 16.
	MaxConns int32
	// ExecuteKeyless executes a POST without an Idempotency-Key as a new
	// order every time, as a service without idempotency does, instead of
	// refusing it (400): the upstream of a client scenario, where a
	// client's blind re-send must really make a second order.
	ExecuteKeyless bool

	_ struct{}
}

// ConsumerConfig configures [Consume].
type ConsumerConfig struct {
	// DSN is the primary Postgres connection string. Required.
	DSN string
	// Name identifies this consumer in consumed_events. Default
	// "consumer-<pid>".
	Name string
	// Mutant is accepted for symmetry with [Config]; only
	// consumer-no-dedupe changes the consumer, other names are ignored.
	Mutant string
	// Batch is how many events one claim takes. Default 16.
	Batch int
	// VisibilityTimeout is how long a claimed, unacknowledged event stays
	// invisible before it is redelivered. Default 30s.
	VisibilityTimeout time.Duration
	// PollInterval is the pause between empty claims. Default 100ms.
	PollInterval time.Duration
	// ExitWhenIdle makes Consume return nil as soon as a claim finds no
	// visible event (a one-shot drain).
	ExitWhenIdle bool
	// Failpoints serves /debug/failpoints on DebugAddr (loopback only).
	Failpoints bool
	// DebugAllow is as [Config.DebugAllow].
	DebugAllow []netip.Prefix
	// DebugAddr is the failpoint listener. Default "127.0.0.1:0".
	DebugAddr string
	// Ready, when set, is called with the debug listener's address (or ""
	// when failpoints are off) once the consumer is running.
	Ready func(addr string)

	_ struct{}
}

// DefaultTokens returns the demo tokens used when [Config.Tokens] is empty:
// "tok-t1" → "t1", "tok-t2" → "t2", "tok-t3" → "t3".
func DefaultTokens() map[string]string {
	return map[string]string{"tok-t1": "t1", "tok-t2": "t2", "tok-t3": "t3"}
}

// DefaultProviderToken is the payment provider's token when
// [Config.ProviderToken] is empty.
const DefaultProviderToken = "tok-provider"

// DefaultProviderSecret is the provider's signing secret when
// [Config.ProviderSecret] is empty.
const DefaultProviderSecret = "whsec_idemchaos_reference"

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.Retention == 0 {
		c.Retention = 24 * time.Hour
	}
	if c.MaxRetryWindow == 0 {
		c.MaxRetryWindow = time.Hour
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.PurgeInterval == 0 {
		c.PurgeInterval = time.Minute
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if len(c.Tokens) == 0 {
		c.Tokens = DefaultTokens()
	} else {
		c.Tokens = maps.Clone(c.Tokens)
	}
	if c.ProviderToken == "" {
		c.ProviderToken = DefaultProviderToken
	}
	if c.ProviderSecret == "" {
		c.ProviderSecret = DefaultProviderSecret
	}
	if c.InitialBalance == 0 {
		c.InitialBalance = 1_000_000_000_000
	}
	if c.MaxConns == 0 {
		c.MaxConns = 16
	}
	return c
}

// validate checks a defaulted config. The retention check is the start-up
// refusal of seed 000 §六; the short-retention mutant skips it.
func (c Config) validate(m mutant) error {
	switch {
	case c.DSN == "":
		return fmt.Errorf("dsn is empty: %w", ErrInvalidConfig)
	case c.Lease <= 0 || c.Retention < 0 || c.MaxRetryWindow < 0 || c.PurgeInterval <= 0 || c.RequestTimeout <= 0:
		return fmt.Errorf("durations must be positive: %w", ErrInvalidConfig)
	case c.InitialBalance < 0:
		return fmt.Errorf("initial balance is negative: %w", ErrInvalidConfig)
	case m.is(mutantReplicaRead) && c.ReplicaDSN == "":
		return ErrReplicaRequired
	}
	for tok, tenant := range c.Tokens {
		if tok == "" || tenant == "" {
			return fmt.Errorf("empty token or tenant: %w", ErrInvalidConfig)
		}
	}
	// MUTANT short-retention: the retention/retry-window relation is not
	// checked, so nothing stops the purge from outrunning a retry.
	if !m.is(mutantShortRetention) && c.Retention < c.MaxRetryWindow {
		return fmt.Errorf("retention %s < max retry window %s: %w", c.Retention, c.MaxRetryWindow, ErrRetentionTooShort)
	}
	return nil
}

// effectiveRetention is the age after which key records are purged.
func (c Config) effectiveRetention(m mutant) time.Duration {
	if m.is(mutantShortRetention) {
		// MUTANT short-retention: a hand-typed value that nobody aligned
		// with the clients' retry window (here: a tenth of the configured
		// retention), so a late but legitimate retry finds no record.
		return c.Retention / 10
	}
	return c.Retention
}

func (c ConsumerConfig) withDefaults(pid int) ConsumerConfig {
	if c.Name == "" {
		c.Name = fmt.Sprintf("consumer-%d", pid)
	}
	if c.Batch <= 0 {
		c.Batch = 16
	}
	if c.VisibilityTimeout <= 0 {
		c.VisibilityTimeout = 30 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.DebugAddr == "" {
		c.DebugAddr = "127.0.0.1:0"
	}
	return c
}
