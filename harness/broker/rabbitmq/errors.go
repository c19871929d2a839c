package rabbitmq

import "errors"

// ErrNotInstalled means the node's binaries are missing: Debian's
// rabbitmq-server package (and its Erlang) is not installed.
var ErrNotInstalled = errors.New("rabbitmq: not installed (apt-get install rabbitmq-server)")

// ErrNoServerUser means the harness runs as root and there is no
// "rabbitmq" OS user to run the node as (the rabbitmq-server package
// creates it).
var ErrNoServerUser = errors.New(`rabbitmq: running as root needs a "rabbitmq" OS user to run the node as (apt-get install rabbitmq-server creates it)`)

// ErrNotTraversable means the rabbitmq user cannot reach the broker's
// directory ([broker.Options.Dir]).
var ErrNotTraversable = errors.New("rabbitmq: the broker's directory is not reachable by the rabbitmq user")
