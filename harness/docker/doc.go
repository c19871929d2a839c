// Package docker is the harness's docker environment: a private network,
// a Postgres primary and streaming standby, toxiproxy-server, and the
// system under test (the reference, or a user's service image) as
// containers, built on the Docker Engine API (github.com/ory/dockertest).
//
// It registers itself under the name "docker" (harness.EnvDocker) when
// imported, as database/sql drivers do, so that only the programs that
// import it link the Docker SDK:
//
//	import _ "github.com/idemchaos/idemchaos/harness/docker"
//
// The idemchaos command imports it; a Go test that runs the local or
// external environment does not need to.
//
// The exported API:
//
//   - [Open] with [Options]: the environment started on its own, outside a
//     harness.Runner, as an [Env] with [Env.StartReference] and [Env.Close]
//     (what `idemchaos bench` times).
package docker
