package main

// The command reads every DSN form idemchaos defines (docs/oracles.md):
// Postgres comes with the harness; MySQL/MariaDB and SQLite are linked here,
// so that a user's Go test that imports only harness links neither. The
// embedded NATS broker of consumer scenarios is linked here for the same
// reason.
import (
	_ "github.com/idemchaos/idemchaos/harness/broker/nats"
	_ "github.com/idemchaos/idemchaos/harness/oracle/mysql"
	_ "github.com/idemchaos/idemchaos/harness/oracle/sqlite"
)
