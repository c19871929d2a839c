// Package mysql links the sql oracle's MySQL and MariaDB driver
// (github.com/go-sql-driver/mysql): a program that imports it reads
// effects.dsn values of the form
//
//	mysql://user:password@host:port/database?param=value
//
// (port 3306 when omitted; user and password URL-escaped; the parameters
// are go-sql-driver/mysql's own, e.g. tls=true, timeout=5s). The idemchaos
// command links it; a Go test links it with
//
//	import _ "github.com/idemchaos/idemchaos/harness/oracle/mysql"
//
// so that a test that imports only harness links no MySQL driver.
//
// Exported API: [Config].
package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/idemchaos/idemchaos/harness/oracle"
)

func init() {
	oracle.RegisterDriver(oracle.Driver{Name: "mysql", Schemes: []string{"mysql"}, Connector: connector, Endpoints: endpoints})
}

// Config translates a mysql:// DSN into go-sql-driver/mysql's
// configuration: user, password, tcp host:port, database, and the query
// parameters as that driver reads them from its own DSN form
// (user:password@tcp(host:port)/database?param=value).
func Config(dsn string) (*gomysql.Config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(u.Scheme, "mysql") || u.Host == "" || u.Opaque != "" {
		return nil, errors.New("want mysql://user:password@host:port/database")
	}
	if u.Fragment != "" {
		return nil, errors.New("a mysql:// DSN has no #fragment")
	}
	c := gomysql.NewConfig()
	c.Net, c.Addr = "tcp", u.Host
	if u.Port() == "" {
		c.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
	}
	c.DBName = strings.TrimPrefix(u.Path, "/")
	if strings.Contains(c.DBName, "/") {
		return nil, fmt.Errorf("database %q: one path segment, the database's name", c.DBName)
	}
	// A server that does not answer must not hold the run for the
	// driver's default of the OS's TCP timeout.
	c.Timeout = 10 * time.Second
	if u.RawQuery == "" {
		return c, nil
	}
	// The parameters are the driver's: its own parser validates them.
	form := c.FormatDSN()
	sep := "?"
	if strings.Contains(form, "?") {
		sep = "&"
	}
	parsed, err := gomysql.ParseDSN(form + sep + u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("parameters %q: %w", u.RawQuery, err)
	}
	return parsed, nil
}

// connector dials through n: the gate checks the address (and looks a
// name up) on every connection the driver makes.
func connector(_ context.Context, dsn string, n oracle.Net) (driver.Connector, error) {
	c, err := Config(dsn)
	if err != nil {
		return nil, err
	}
	c.DialFunc = n.DialContext
	return gomysql.NewConnector(c)
}

func endpoints(dsn string) ([]oracle.Endpoint, error) {
	c, err := Config(dsn)
	if err != nil {
		return nil, err
	}
	return []oracle.Endpoint{{Network: "tcp", Addr: c.Addr}}, nil
}
