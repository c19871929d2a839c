package harness

import "github.com/idemchaos/idemchaos/internal/env"

// EnvKind names the environment [Open] starts: a caller of the harness
// never needs the internal environment package.
type EnvKind = env.Kind

// The environments.
const (
	// EnvAuto is external when a target URL is given, else local.
	EnvAuto EnvKind = env.KindAuto
	// EnvLocal is the embedded environment: throwaway Postgres, in-process
	// Toxiproxy, the reference as child processes.
	EnvLocal EnvKind = env.KindLocal
	// EnvExternal is a user's service behind the harness's proxies.
	EnvExternal EnvKind = env.KindExternal
	// EnvDocker runs the environment in containers.
	EnvDocker EnvKind = env.KindDocker
)

// ParseEnvKind parses an environment name (auto, local, external or
// docker; "" is auto).
func ParseEnvKind(s string) (EnvKind, error) { return env.ParseKind(s) }

// DatabaseProxyAddr is where the proxy in front of an external service's
// database listens ("" when there is none): the service must be pointed
// at it for database faults to reach it.
func (r *Runner) DatabaseProxyAddr() string {
	if r.External == nil {
		return ""
	}
	return r.External.DatabaseProxyAddr()
}
