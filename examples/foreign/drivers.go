package foreign

// The corpus's scenarios read MariaDB (stockroom) and SQLite (orderdesk):
// a team whose oracle is not Postgres links its driver, as this does.
import (
	_ "github.com/idemchaos/idemchaos/harness/oracle/mysql"
	_ "github.com/idemchaos/idemchaos/harness/oracle/sqlite"
)
