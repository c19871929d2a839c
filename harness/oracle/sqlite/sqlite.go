// Package sqlite links the sql oracle's SQLite driver (modernc.org/sqlite:
// SQLite's own C source translated to Go, so no cgo, and SQLite's own
// file locking, which a service's C SQLite shares): a program that imports
// it reads effects.dsn values of the form
//
//	sqlite:PATH
//
// where PATH is the database file (relative to the working directory, or
// absolute: sqlite:/var/lib/orders.sqlite). The file is opened read-only
// and never created: a missing file is an error, not an empty database.
// The idemchaos command links it; a Go test links it with
//
//	import _ "github.com/idemchaos/idemchaos/harness/oracle/sqlite"
//
// so that a test that imports only harness links no SQLite.
package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	msqlite "modernc.org/sqlite"

	"github.com/idemchaos/idemchaos/harness/oracle"
)

func init() {
	oracle.RegisterDriver(oracle.Driver{Name: "sqlite", Schemes: []string{"sqlite"}, Connector: connector, Endpoints: endpoints})
}

// path is the file of a sqlite:PATH DSN.
func path(dsn string) (string, error) {
	p := dsn[len("sqlite:"):]
	if p == "" {
		return "", errors.New("want sqlite:PATH (the database file)")
	}
	if strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///") {
		return "", fmt.Errorf("%q: want sqlite:PATH, a file path (sqlite:/var/lib/x.db), not a URL with a host", dsn)
	}
	return p, nil
}

func endpoints(dsn string) ([]oracle.Endpoint, error) {
	p, err := path(dsn)
	if err != nil {
		return nil, err
	}
	return []oracle.Endpoint{{Network: "file", Addr: p}}, nil
}

// connector opens a file: nothing is dialled, so n is not needed.
func connector(_ context.Context, dsn string, _ oracle.Net) (driver.Connector, error) {
	p, err := path(dsn)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("%s: %w (the oracle opens an existing database read-only)", p, err)
	} else if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a database file", p)
	}
	// Read-only, never created; a writer holding the lock is waited for
	// (busy_timeout), as the service's own connections wait.
	name := (&url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro&_pragma=busy_timeout(10000)"}).String()
	return fileConnector{name: name}, nil
}

// fileConnector opens name with modernc's driver; database/sql takes a
// connector, and the driver offers only Open(name).
type fileConnector struct{ name string }

var drv = &msqlite.Driver{}

func (c fileConnector) Connect(context.Context) (driver.Conn, error) { return drv.Open(c.name) }
func (c fileConnector) Driver() driver.Driver                        { return drv }
