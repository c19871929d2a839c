// Package env starts the two environments that need no container engine
// (DESIGN §7); harness wraps each as one of its environments:
//
//   - local: throwaway Postgres clusters from this machine's binaries
//     ([pgcluster]), Toxiproxy in-process ([proxy]), services as supervised
//     child processes ([proc]), all inside one run directory ([runenv]).
//     Without binaries it fails with [ErrNoEnvironment], saying what to
//     install.
//   - external: a user's service URL (and optionally its database address
//     and a DSN for the SQL effect oracle). The harness puts its own proxies
//     in front of the service and, if asked, between the service and its
//     database. Every address passes through the address gate
//     ([addrgate]): loopback unless the command line allows remote ones.
//
// Every error this package returns is an environment error; the CLI maps
// them to exit code 3.
//
// Exported API:
//
//   - [Local], [LocalConfig], [StartLocal]: [Local.Primary],
//     [Local.Standby], [Local.Proxies], [Local.DatabaseProxyAddr],
//     [Local.ProxiedDSN], [Local.StartProcess], [Local.Run], [Local.Close].
//   - [External], [ExternalConfig], [StartExternal]: [External.ServiceURL]
//     (through the proxy), [External.TargetURL], [External.DatabaseProxyAddr],
//     [External.DSN], [External.Proxies], [External.Close];
//     [CheckReachable].
//   - [ServiceProxy], [DatabaseProxy]: the proxy names both environments use
//     (the same as faults.ServiceLink and faults.DatabaseLink).
//   - [UnreachableError]; [ErrUnreachable], [ErrNoEnvironment].
package env
