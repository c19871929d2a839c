// Package dockerenv is the docker environment (DESIGN §7), built on
// github.com/ory/dockertest/v3 and the Docker Engine API it wraps:
//
//   - [Connect] reaches the daemon ([ErrDaemonUnreachable] says how to start
//     it) and reaps what an earlier harness left behind when it was killed.
//   - [BuildImages] and the Build* functions make minimal local images
//     without a registry: static Go binaries FROM scratch (the reference
//     service is the idemchaos binary itself, toxiproxy-server, a user's
//     Go service) and Postgres assembled from this machine's Debian
//     PostgreSQL binaries and the shared libraries they load.
//   - [Start] starts an [Env]: a private network, a Postgres primary and a
//     streaming standby, and a toxiproxy-server container whose proxies
//     listen on ports published on 127.0.0.1. [Env.RunContainer] starts the
//     system under test beside them; a [Container] is killed with SIGKILL
//     and restarted for process faults.
//
// Everything is labelled with [LabelRun] and removed by [Env.Close]; a
// harness killed outright leaves containers whose owner process is gone,
// and the next [Connect] removes them.
package dockerenv
