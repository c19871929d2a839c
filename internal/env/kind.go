package env

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/proxy"
)

// Kind names an environment.
type Kind string

const (
	// KindAuto picks external if a service URL is given, else local if
	// Postgres binaries are installed, else fails with [ErrNoEnvironment].
	KindAuto Kind = "auto"
	// KindLocal is the embedded environment (see [Local]).
	KindLocal Kind = "local"
	// KindExternal is a user's service (see [External]).
	KindExternal Kind = "external"
	// KindDocker is reserved for dockertest-based Postgres and Toxiproxy; it
	// is not built yet.
	KindDocker Kind = "docker"
)

// ParseKind parses an environment name; "" means [KindAuto].
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case "":
		return KindAuto, nil
	case KindAuto, KindLocal, KindExternal, KindDocker:
		return k, nil
	}
	return "", fmt.Errorf("%w %q (want auto, local, external or docker)", ErrUnknownKind, s)
}

// Env is a started environment.
type Env interface {
	// Kind is which environment this is.
	Kind() Kind
	// Proxies is the Toxiproxy the environment's faults go through.
	Proxies() proxy.Server
	// Close stops everything the environment started and removes its files.
	Close(ctx context.Context) error
}

var (
	_ Env = (*Local)(nil)
	_ Env = (*External)(nil)
)

// Options selects and configures an environment for [Start].
type Options struct {
	// Kind is the environment to start; "" means [KindAuto].
	Kind Kind
	// Local configures the local environment.
	Local LocalConfig
	// External configures the external environment.
	External ExternalConfig

	_ struct{}
}

// findBinDir is the Postgres binary lookup; a test seam.
var findBinDir = pgcluster.FindBinDir

// noEnvironmentHelp is what to do when auto finds nothing.
const noEnvironmentHelp = `no PostgreSQL server binaries found (looked on PATH, at pg_config --bindir and in /usr/lib/postgresql/*/bin).
Either install them:
    Debian/Ubuntu: apt-get install postgresql-15   (any version >= 13 works)
    Fedora/RHEL:   dnf install postgresql-server
    macOS:         brew install postgresql@15
or test an existing service instead:
    --env external --target http://127.0.0.1:8080 [--dsn postgres://user@127.0.0.1:5432/db]`

// Resolve turns [KindAuto] into a concrete kind, checking that it can be
// had; other kinds come back unchanged (their problems surface in [Start]).
func Resolve(ctx context.Context, opts Options) (Kind, error) {
	kind := opts.Kind
	if kind == "" {
		kind = KindAuto
	}
	if kind != KindAuto {
		return kind, nil
	}
	if opts.External.ServiceURL != "" {
		return KindExternal, nil
	}
	if opts.Local.BinDir != "" {
		return KindLocal, nil
	}
	if _, err := findBinDir(ctx); err == nil {
		return KindLocal, nil
	}
	// The docker environment will be tried here once it exists.
	return "", fmt.Errorf("%w: %s", ErrNoEnvironment, noEnvironmentHelp)
}

// Start resolves opts.Kind and starts that environment.
func Start(ctx context.Context, opts Options) (Env, error) {
	kind, err := Resolve(ctx, opts)
	if err != nil {
		return nil, err
	}
	switch kind {
	case KindLocal:
		return StartLocal(ctx, opts.Local)
	case KindExternal:
		return StartExternal(ctx, opts.External)
	case KindDocker:
		return nil, ErrDockerUnavailable
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownKind, kind)
}
