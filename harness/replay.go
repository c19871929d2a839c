package harness

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/idemchaos/idemchaos/scenarios"
)

// Invocation is how a run was started besides its scenario and seed: what
// a replay must repeat to talk to the same service the same way.
type Invocation struct {
	// Target is --target: the service that replaced the scenario's target.
	Target       string
	AllowRemote  bool
	DatabaseAddr string
	// Plan is --plan: a saved plan that replaced the generated one.
	Plan string
	// Env is --env when the run was not in the environment a bare run picks
	// (docker: the same scenario could run locally and behave otherwise).
	Env string
	_   struct{}
}

// ReplayCommand is the command that runs s again exactly: the environment
// variables its ${NAME} references read (as they were, "" for unset), the
// file, the seed, the mutant and the invocation's flags, shell-quoted.
func ReplayCommand(s *scenarios.Scenario, seed int64, mutant string, inv Invocation) string {
	var b strings.Builder
	names := make([]string, 0, len(s.Env))
	for n := range s.Env {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%s ", n, shellQuote(s.Env[n]))
	}
	file := "<inline scenario>"
	if s.File != "" {
		file = shellQuote(s.File)
	}
	fmt.Fprintf(&b, "idemchaos run -s %s --seed %d", file, seed)
	if mutant != "" {
		b.WriteString(" --mutant " + shellQuote(mutant))
	}
	if inv.Target != "" {
		b.WriteString(" --target " + shellQuote(inv.Target))
	}
	if inv.AllowRemote {
		b.WriteString(" --allow-remote")
	}
	if inv.DatabaseAddr != "" {
		b.WriteString(" --db-addr " + shellQuote(inv.DatabaseAddr))
	}
	if inv.Plan != "" {
		b.WriteString(" --plan " + shellQuote(inv.Plan))
	}
	if inv.Env != "" {
		b.WriteString(" --env " + shellQuote(inv.Env))
	}
	return b.String()
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
