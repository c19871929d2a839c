package main

// The command reads every DSN form idemchaos defines (docs/oracles.md):
// Postgres comes with the harness; MySQL/MariaDB and SQLite are linked here,
// so that a user's Go test that imports only harness links neither. The
// brokers of consumer scenarios (the embedded NATS server, RabbitMQ's
// client, Redis Streams' client) are linked here for the same reason.
import (
	_ "github.com/idemchaos/idemchaos/harness/broker/nats"
	_ "github.com/idemchaos/idemchaos/harness/broker/rabbitmq"
	_ "github.com/idemchaos/idemchaos/harness/broker/redis"
	_ "github.com/idemchaos/idemchaos/harness/oracle/mysql"
	_ "github.com/idemchaos/idemchaos/harness/oracle/sqlite"
)
