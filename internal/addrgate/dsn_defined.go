package addrgate

import "fmt"

// definedBy are the DSN schemes idemchaos defines and the package whose
// driver reads each (docs/oracles.md), so that a program that uses one it
// did not link is told what to import rather than that the scheme is
// unknown.
var definedBy = map[string]string{
	"postgres":   harnessOracle,
	"postgresql": harnessOracle,
	"mysql":      "github.com/idemchaos/idemchaos/harness/oracle/mysql",
	"sqlite":     "github.com/idemchaos/idemchaos/harness/oracle/sqlite",
}

// harnessOracle links Postgres's form (and the key=value one): every
// program that runs an oracle links it.
const harnessOracle = "github.com/idemchaos/idemchaos/harness/oracle"

func unlinked(scheme, pkg string) error {
	return fmt.Errorf("%s: DSNs are read by the driver in %s, which this program does not link (a Go test links it with import _ %q; the idemchaos command always does)", scheme, pkg, pkg)
}

// Scheme returns a DSN's scheme, lower-cased, and whether it has one (a
// key=value DSN has none).
func Scheme(dsn string) (string, bool) { return schemeOf(dsn) }

// CheckDSNForm says whether dsn is one the program reads, without looking
// any host up: its scheme's form is linked and parses it. A Postgres DSN in
// a program that links no oracle at all (scenarios' own tests, a validator
// without the harness) is left to the run, which always links it.
func CheckDSNForm(dsn string) error {
	scheme, ok := schemeOf(dsn)
	dsnForms.RLock()
	unlinkedPostgres := (ok && dsnForms.byScheme[scheme] == nil && definedBy[scheme] == harnessOracle) || (!ok && dsnForms.keywords == nil)
	dsnForms.RUnlock()
	if unlinkedPostgres {
		return nil
	}
	_, _, err := Endpoints(dsn)
	return err
}
