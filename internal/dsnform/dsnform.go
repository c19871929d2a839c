// Package dsnform is the registry of the database DSN forms idemchaos
// reads: each sql-oracle driver registers the schemes it claims and how to
// list the places a DSN of its form connects to, so that validation (in
// scenarios), the address check (in the harness) and the oracle agree on
// which DSNs are read and where they lead.
//
// It stands in for the DSN registry of the address gate being built beside
// it (internal/addrgate's RegisterDSN, DSNForm, Endpoint, Endpoints carry
// the same names and meaning): when that lands, this package goes and its
// callers import the gate.
//
// Exported API: [DSNForm], [Endpoint], [RegisterDSN], [Endpoints], [Check],
// [Scheme].
package dsnform

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Endpoint is one place a connection made with a DSN may go.
type Endpoint struct {
	// Network is "tcp" (Addr is host:port), "unix" (Addr is a socket
	// path) or "file" (Addr is a path: a database in a file, nothing is
	// dialled).
	Network string
	Addr    string
}

// DSNForm is one way of writing a database DSN, registered by the package
// that connects with it.
type DSNForm struct {
	// Name names the form in messages ("mysql").
	Name string
	// Schemes are the schemes the form claims ("postgres", "postgresql";
	// "mysql"; "sqlite" for "sqlite:PATH").
	Schemes []string
	// Keywords says the form also claims DSNs without a scheme (key=value
	// strings such as "host=a port=5432"). One form may.
	Keywords bool
	// Endpoints lists every endpoint a connection with dsn may use, or
	// why dsn is not a DSN of the form.
	Endpoints func(dsn string) ([]Endpoint, error)

	_ struct{}
}

// defined are the schemes idemchaos defines and the package that links
// each one's driver, named when a program uses a scheme it did not link.
var defined = map[string]string{
	"postgres":   harnessOracle,
	"postgresql": harnessOracle,
	"mysql":      "github.com/idemchaos/idemchaos/harness/oracle/mysql",
	"sqlite":     "github.com/idemchaos/idemchaos/harness/oracle/sqlite",
}

// harnessOracle links Postgres's form (and the key=value one): every
// program that runs an oracle links it.
const harnessOracle = "github.com/idemchaos/idemchaos/harness/oracle"

// Check says whether dsn is one the program reads: its scheme's form is
// linked and parses it. A Postgres DSN in a program that links no oracle
// at all (scenarios' own tests, a validator without the harness) is left
// to the run, which always links it.
func Check(dsn string) error {
	scheme, ok := Scheme(dsn)
	forms.RLock()
	unlinked := (ok && forms.byScheme[scheme] == nil && defined[scheme] == harnessOracle) || (!ok && forms.keywords == nil)
	forms.RUnlock()
	if unlinked {
		return nil
	}
	_, _, err := Endpoints(dsn)
	return err
}

var forms struct {
	sync.RWMutex
	byScheme map[string]*DSNForm
	keywords *DSNForm
}

// RegisterDSN makes a DSN form known. Registering a scheme (or the
// keyword form) twice panics: two drivers cannot both own one.
func RegisterDSN(f DSNForm) {
	forms.Lock()
	defer forms.Unlock()
	if forms.byScheme == nil {
		forms.byScheme = map[string]*DSNForm{}
	}
	form := &f
	for _, s := range f.Schemes {
		s = strings.ToLower(s)
		if old, ok := forms.byScheme[s]; ok {
			panic(fmt.Sprintf("dsnform: scheme %q registered by %s and %s", s, old.Name, f.Name))
		}
		forms.byScheme[s] = form
	}
	if f.Keywords {
		if forms.keywords != nil {
			panic(fmt.Sprintf("dsnform: keyword DSNs registered by %s and %s", forms.keywords.Name, f.Name))
		}
		forms.keywords = form
	}
}

// Scheme returns a DSN's scheme (RFC 3986: a letter, then letters, digits,
// '+', '-', '.', ending at the first ':'), lower-cased, and whether it has
// one. A key=value DSN has none.
func Scheme(dsn string) (string, bool) {
	i := strings.IndexByte(dsn, ':')
	if i <= 0 {
		return "", false
	}
	for j, c := range dsn[:i] {
		letter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false
		}
	}
	return strings.ToLower(dsn[:i]), true
}

// Endpoints lists every endpoint dsn names, by the form that claims it,
// and that form's name. A scheme no linked driver claims is an error that
// says which schemes are read and, for one idemchaos defines, which
// package to link.
func Endpoints(dsn string) (string, []Endpoint, error) {
	f, err := formOf(dsn)
	if err != nil {
		return "", nil, err
	}
	eps, err := f.Endpoints(dsn)
	return f.Name, eps, err
}

func formOf(dsn string) (*DSNForm, error) {
	forms.RLock()
	defer forms.RUnlock()
	if scheme, ok := Scheme(dsn); ok {
		if f := forms.byScheme[scheme]; f != nil {
			return f, nil
		}
		if pkg, ok := defined[scheme]; ok {
			return nil, fmt.Errorf("%s: DSNs are read by the driver in %s, which this program does not link (a Go test links it with import _ %q; the idemchaos command always does)", scheme, pkg, pkg)
		}
		return nil, fmt.Errorf("scheme %q is not one idemchaos reads (want %s)", scheme, known())
	}
	if forms.keywords != nil {
		return forms.keywords, nil
	}
	return nil, fmt.Errorf("not a DSN with a scheme (want %s)", known())
}

// known lists the schemes idemchaos defines and any other a linked form
// claims, and the key=value form.
func known() string {
	set := map[string]bool{}
	for s := range defined {
		set[s+":"] = true
	}
	for s := range forms.byScheme {
		set[s+":"] = true
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(append(out, "or key=value for postgres"), ", ")
}
