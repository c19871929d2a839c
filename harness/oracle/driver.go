package oracle

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/idemchaos/idemchaos/internal/dsnform"
)

// DialFunc connects to addr ("host:port" on "tcp"), the way a driver's own
// dialer would. The harness passes one that goes through its address
// check; nil means the driver's default dialer.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

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
	// Connector translates dsn into the driver's own configuration; its
	// connections go through dial (nil: the driver's default).
	Connector func(dsn string, dial DialFunc) (driver.Connector, error)
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
	dsnform.RegisterDSN(dsnform.DSNForm{Name: d.Name, Schemes: d.Schemes, Keywords: d.Keywords, Endpoints: func(dsn string) ([]dsnform.Endpoint, error) {
		eps, err := d.Endpoints(dsn)
		out := make([]dsnform.Endpoint, len(eps))
		for i, ep := range eps {
			out[i] = dsnform.Endpoint(ep)
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
	if _, _, err := dsnform.Endpoints(dsn); err != nil {
		return nil, err
	}
	drivers.RLock()
	defer drivers.RUnlock()
	if scheme, ok := dsnform.Scheme(dsn); ok {
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
	name, eps, err := dsnform.Endpoints(dsn)
	out := make([]Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = Endpoint(ep)
	}
	return name, out, err
}
