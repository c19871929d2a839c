package harness

import (
	"fmt"
	"strings"

	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/scenarios"
)

// EnvKind names the environment [Open] starts.
type EnvKind string

// The environments.
const (
	// EnvAuto is external when a target URL is given, docker when a
	// scenario's target is a service image, else local.
	EnvAuto EnvKind = "auto"
	// EnvLocal is the embedded environment: throwaway Postgres, in-process
	// Toxiproxy, the reference as child processes.
	EnvLocal EnvKind = "local"
	// EnvExternal is a user's service behind the harness's proxies.
	EnvExternal EnvKind = "external"
	// EnvDocker runs the environment in containers. It is linked into a
	// program only by importing github.com/idemchaos/idemchaos/harness/docker
	// (the idemchaos command does), which keeps the Docker SDK out of every
	// other user of the harness.
	EnvDocker EnvKind = "docker"
)

// ParseEnvKind parses an environment name (auto, local, external or
// docker; "" is auto).
func ParseEnvKind(s string) (EnvKind, error) {
	switch k := EnvKind(strings.ToLower(strings.TrimSpace(s))); k {
	case "":
		return EnvAuto, nil
	case EnvAuto, EnvLocal, EnvExternal, EnvDocker:
		return k, nil
	}
	return "", fmt.Errorf("unknown environment kind %q (want auto, local, external or docker)", s)
}

// autoKind is the environment [EnvAuto] picks: external for a target URL,
// docker for a scenario whose target is a service image, else local.
func autoKind(targetURL string, ss ...*scenarios.Scenario) EnvKind {
	if targetURL != "" {
		return EnvExternal
	}
	for _, s := range ss {
		if s.Target.Image != "" {
			return EnvDocker
		}
	}
	return EnvLocal
}

// Kind is the environment the runner runs in.
func (r *Runner) Kind() EnvKind { return r.kind }

// DatabaseProxyAddr is where the proxy in front of an external service's
// database listens ("" when there is none): the service must be pointed
// at it for database faults to reach it.
func (r *Runner) DatabaseProxyAddr() string {
	if p, ok := r.env.(sut.DatabaseProxied); ok {
		return p.DatabaseProxyAddr()
	}
	return ""
}
