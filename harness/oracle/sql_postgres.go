package oracle

import (
	"context"
	"database/sql/driver"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Postgres is read by this package itself (the reference's oracle needs
// pgx anyway): postgres:// and postgresql:// URLs, several hosts included
// (postgres://a:5432,b:5433/db), and key=value strings (host=a port=5432;
// PGHOST and the other libpq variables fill what a DSN leaves out). The
// gate learns their hosts from pgconn's own parser, so it checks exactly
// what a connection would try.
func init() {
	RegisterDriver(Driver{Name: "postgres", Schemes: []string{"postgres", "postgresql"}, Keywords: true,
		Connector: pgConnector, Endpoints: func(dsn string) ([]Endpoint, error) {
			eps, err := pgEndpoints(dsn)
			return fromGate(eps), err
		}})
}

func pgConnector(ctx context.Context, dsn string, n Net) (driver.Connector, error) {
	cfg, err := connConfig(ctx, n, dsn)
	if err != nil {
		return nil, err
	}
	// The simple protocol: one round trip, and any query the user wrote.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return stdlib.GetConnector(*cfg), nil
}
