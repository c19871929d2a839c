package addrgate

import (
	"context"
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
// that connects with it: it knows how to list every host a DSN names
// (a multi-host DSN names several, and a driver may fall back to each).
type DSNForm struct {
	// Name names the form in messages ("postgres").
	Name string
	// Schemes are the URL schemes the form claims ("postgres",
	// "postgresql"; "mysql"; "sqlite" for "sqlite:PATH").
	Schemes []string
	// Keywords says the form also claims DSNs without a scheme
	// (key=value strings such as "host=a,b port=5432"). One form may.
	Keywords bool
	// Endpoints lists every endpoint a connection with dsn may use.
	Endpoints func(dsn string) ([]Endpoint, error)

	_ struct{}
}

var dsnForms struct {
	sync.RWMutex
	byScheme map[string]*DSNForm
	keywords *DSNForm
}

// RegisterDSN makes a DSN form known to [Gate.CheckDSN] and [Endpoints].
// Registering a scheme (or the keyword form) twice panics: two drivers
// cannot both own one.
func RegisterDSN(f DSNForm) {
	dsnForms.Lock()
	defer dsnForms.Unlock()
	if dsnForms.byScheme == nil {
		dsnForms.byScheme = map[string]*DSNForm{}
	}
	form := &f
	for _, s := range f.Schemes {
		s = strings.ToLower(s)
		if old, ok := dsnForms.byScheme[s]; ok {
			panic(fmt.Sprintf("addrgate: DSN scheme %q registered by %s and %s", s, old.Name, f.Name))
		}
		dsnForms.byScheme[s] = form
	}
	if f.Keywords {
		if dsnForms.keywords != nil {
			panic(fmt.Sprintf("addrgate: keyword DSNs registered by %s and %s", dsnForms.keywords.Name, f.Name))
		}
		dsnForms.keywords = form
	}
}

// formOf finds the form that claims dsn: by its scheme (the text before
// the first ':' when it looks like one), else the keyword form.
func formOf(dsn string) (*DSNForm, error) {
	dsnForms.RLock()
	defer dsnForms.RUnlock()
	if scheme, ok := schemeOf(dsn); ok {
		if f := dsnForms.byScheme[scheme]; f != nil {
			return f, nil
		}
		if pkg, ok := definedBy[scheme]; ok {
			return nil, unlinked(scheme, pkg)
		}
		return nil, fmt.Errorf("scheme %q is not one idemchaos reads (%s)", scheme, knownSchemes())
	}
	if dsnForms.keywords != nil {
		return dsnForms.keywords, nil
	}
	return nil, fmt.Errorf("not a URL, and no form of key=value DSN is known (%s)", knownSchemes())
}

// schemeOf returns a URL scheme (RFC 3986: a letter, then letters, digits,
// '+', '-', '.') ending at the first ':', lower-cased.
func schemeOf(dsn string) (string, bool) {
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

func knownSchemes() string {
	var out []string
	for s := range dsnForms.byScheme {
		out = append(out, s+":")
	}
	sort.Strings(out)
	if dsnForms.keywords != nil {
		out = append(out, "key=value ("+dsnForms.keywords.Name+")")
	}
	if len(out) == 0 {
		return "none linked; idemchaos defines mysql:, postgres:, postgresql:, sqlite:"
	}
	return strings.Join(out, ", ")
}

// Endpoints lists every endpoint dsn names, by the form that claims it,
// and that form's name.
func Endpoints(dsn string) (string, []Endpoint, error) {
	f, err := formOf(dsn)
	if err != nil {
		return "", nil, err
	}
	eps, err := f.Endpoints(dsn)
	return f.Name, eps, err
}

// CheckDSN refuses a DSN (setting names it) that names any host the gate
// would refuse, before a connection is tried: a multi-host DSN falls back
// to its later hosts when the first fails, so each one must pass. Unix
// sockets and files are local. With remote addresses allowed nothing is
// looked up here: the driver's connection resolves once, through
// [Way.LookupHost].
func (g *Gate) CheckDSN(ctx context.Context, dsn, setting string) error {
	g = g.or()
	_, eps, err := Endpoints(dsn)
	if err != nil {
		return fmt.Errorf("%s: %w", setting, err)
	}
	if g.cfg.AllowRemote {
		return nil
	}
	for _, ep := range eps {
		if ep.Network != "tcp" {
			continue
		}
		if _, err := g.Resolve(ctx, ep.Addr, setting); err != nil {
			return err
		}
	}
	return nil
}
