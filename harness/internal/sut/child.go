package sut

import (
	"encoding/json"
	"net/netip"
	"time"
)

// ChildEnv turns a copy of the harness's binary, started by an
// environment, into a reference service or consumer (harness.MaybeChild
// reads it). Using the same binary means no second build, and works for
// the idemchaos command and for test binaries alike.
const ChildEnv = "IDEMCHAOS_CHILD"

// ChildSpec is the JSON in [ChildEnv]. It lists the fields the harness
// sets (the reference's configs carry callbacks, which JSON cannot).
type ChildSpec struct {
	Role string `json:"role"` // "serve", "consume" or "pause"

	DSN               string            `json:"dsn"`
	ReplicaDSN        string            `json:"replica_dsn,omitempty"`
	Addr              string            `json:"addr"`
	Mutant            string            `json:"mutant,omitempty"`
	Retention         time.Duration     `json:"retention,omitempty"`
	RetryWindow       time.Duration     `json:"retry_window,omitempty"`
	Lease             time.Duration     `json:"lease,omitempty"`
	Tokens            map[string]string `json:"tokens,omitempty"`
	VisibilityTimeout time.Duration     `json:"visibility_timeout,omitempty"`
	PollInterval      time.Duration     `json:"poll_interval,omitempty"`
	// ExecuteKeyless: the reference executes keyless POSTs (a client
	// scenario's upstream).
	ExecuteKeyless bool `json:"execute_keyless,omitempty"`
	// DebugAllow is a container's network, trusted for /debug/.
	DebugAllow []netip.Prefix `json:"debug_allow,omitempty"`
}

// ChildEnvValue is the NAME=value environment entry that starts spec.
func ChildEnvValue(spec ChildSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	return ChildEnv + "=" + string(b), nil
}

// ByToken inverts a tenant → token map into the token → tenant map the
// reference authenticates with.
func ByToken(tokens map[string]string) map[string]string {
	out := make(map[string]string, len(tokens))
	for tenant, tok := range tokens {
		out[tok] = tenant
	}
	return out
}
