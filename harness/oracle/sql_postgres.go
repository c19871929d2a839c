package oracle

import (
	"database/sql/driver"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Postgres is read by this package itself (the reference's oracle needs
// pgx anyway): postgres:// and postgresql:// URLs, several hosts included
// (postgres://a:5432,b:5433/db), and key=value strings (host=a port=5432;
// PGHOST and the other libpq variables fill what a DSN leaves out).
func init() {
	RegisterDriver(Driver{Name: "postgres", Schemes: []string{"postgres", "postgresql"}, Keywords: true,
		Connector: pgConnector, Endpoints: pgEndpoints})
}

func pgConnector(dsn string, dial DialFunc) (driver.Connector, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	// The simple protocol: one round trip, and any query the user wrote.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	if dial != nil {
		cfg.DialFunc = pgconn.DialFunc(dial)
	}
	return stdlib.GetConnector(*cfg), nil
}

// pgEndpoints lists every host a connection may try, from pgconn's own
// parser: the first and each fallback (pgconn falls back to the next host
// when one fails).
func pgEndpoints(dsn string) ([]Endpoint, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	var out []Endpoint
	seen := map[Endpoint]bool{}
	add := func(host string, port uint16) {
		ep := Endpoint{Network: "tcp", Addr: net.JoinHostPort(host, strconv.Itoa(int(port)))}
		if strings.HasPrefix(host, "/") {
			ep = Endpoint{Network: "unix", Addr: host}
		}
		if !seen[ep] {
			seen[ep] = true
			out = append(out, ep)
		}
	}
	add(cfg.Host, cfg.Port)
	for _, fb := range cfg.Fallbacks {
		add(fb.Host, fb.Port)
	}
	return out, nil
}
