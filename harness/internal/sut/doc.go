// Package sut is the seam between the run loop and the environments that
// start a system under test for it: local (a throwaway Postgres and the
// reference as child processes), external (a user's service behind the
// harness's proxies) and docker (everything in containers). The run loop
// in package harness sees one [Environment]; each environment registers
// itself by name from its own file, as database/sql drivers do, so an
// optional one (docker, in harness/docker) is linked only into the
// binaries that import it.
//
// It is internal to harness: a user of the module sees environment names
// ([Register]'s keys) and never these types.
//
// The exported API:
//
//   - [Environment], [Opener], [Config], [Register], [Lookup], [Names]: the
//     registry of environments.
//   - [Target] and [TargetSpec]: a started system under test, and what the
//     run asks an environment to start.
//   - [ReplicaDelayer]: a standby whose apply delay faults change.
//   - [DatabaseProxied]: the optional interface of an environment that
//     proxies a user's database.
//   - [ChildSpec], [ChildEnv], [ChildEnvValue], [ByToken]: the role a copy
//     of the harness's binary plays when an environment starts it (a
//     reference service, its consumer, a container's pause process).
package sut
