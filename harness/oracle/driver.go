package oracle

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"

	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// Endpoint is one place a connection made with a DSN may go: Network "tcp"
// (Addr host:port), "unix" (a socket path) or "file" (a database file:
// nothing is dialled).
type Endpoint struct{ Network, Addr string }

// Driver is one kind of database the sql oracle reads through
// database/sql, registered from init by the package that links its
// database/sql driver: Postgres by this package, MySQL and MariaDB by
// harness/oracle/mysql, SQLite by harness/oracle/sqlite. Only a program
// that links a driver's package reads (and validates) its DSNs, so a
// user's test that imports harness links no MySQL or SQLite driver.
type Driver struct {
	// Name names the driver in messages ("mysql").
	Name string
	// Schemes are the DSN schemes it claims ("mysql" for mysql://…,
	// "sqlite" for sqlite:PATH).
	Schemes []string
	// Keywords says it also claims DSNs without a scheme (Postgres's
	// key=value form). One driver may.
	Keywords bool
	// Connector translates dsn into the driver's own configuration, its
	// every lookup and connection through n (the address gate's way out
	// for effects.dsn).
	Connector func(ctx context.Context, dsn string, n Net) (driver.Connector, error)
	// Endpoints lists every place a connection with dsn may go (a DSN
	// with several hosts names each), for the address check; an error says
	// why dsn is not a DSN of this driver.
	Endpoints func(dsn string) ([]Endpoint, error)

	_ struct{}
}

var drivers struct {
	sync.RWMutex
	byScheme map[string]*Driver
	keywords *Driver
}

// RegisterDriver makes a driver's schemes readable by [SQL] and known to
// validation. Registering a scheme twice panics.
func RegisterDriver(d Driver) {
	addrgate.RegisterDSN(addrgate.DSNForm{Name: d.Name, Schemes: d.Schemes, Keywords: d.Keywords, Endpoints: func(dsn string) ([]addrgate.Endpoint, error) {
		eps, err := d.Endpoints(dsn)
		out := make([]addrgate.Endpoint, len(eps))
		for i, ep := range eps {
			out[i] = addrgate.Endpoint(ep)
		}
		return out, err
	}})
	drivers.Lock()
	defer drivers.Unlock()
	if drivers.byScheme == nil {
		drivers.byScheme = map[string]*Driver{}
	}
	for _, s := range d.Schemes {
		drivers.byScheme[strings.ToLower(s)] = &d
	}
	if d.Keywords {
		drivers.keywords = &d
	}
}

// driverFor is the driver that claims dsn. The error is the registry's:
// it names the schemes that are linked, or the package to link.
func driverFor(dsn string) (*Driver, error) {
	if _, _, err := addrgate.Endpoints(dsn); err != nil {
		return nil, err
	}
	drivers.RLock()
	defer drivers.RUnlock()
	if scheme, ok := addrgate.Scheme(dsn); ok {
		if d := drivers.byScheme[scheme]; d != nil {
			return d, nil
		}
	} else if drivers.keywords != nil {
		return drivers.keywords, nil
	}
	return nil, fmt.Errorf("no driver reads %q", dsn)
}

// DSNEndpoints lists every place a connection with dsn may go, by the
// driver that claims it, and that driver's name.
func DSNEndpoints(dsn string) (string, []Endpoint, error) {
	name, eps, err := addrgate.Endpoints(dsn)
	return name, fromGate(eps), err
}

func fromGate(eps []addrgate.Endpoint) []Endpoint {
	out := make([]Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = Endpoint(ep)
	}
	return out
}
