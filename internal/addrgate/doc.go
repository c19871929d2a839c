// Package addrgate is the one door every address the harness touches goes
// through: each outbound connection (the target, the oracles, the database
// address, the Toxiproxy API, record's upstream, the driver's own
// connections to the fault proxies) and each listener it opens. idemchaos
// sends faults and load, so it must not do so to another machine by
// accident: without --allow-remote only loopback passes.
//
// The rules, in the order they are applied to a host:
//
//   - An IP literal is what it says: 127.0.0.0/8, ::1 and their IPv4-mapped
//     forms (::ffff:127.0.0.1) are loopback; 0.0.0.0, :: and an empty host
//     stand for every interface and are not.
//   - A name is looked up in the hosts file (/etc/hosts) first, then, if it
//     is a loopback name ("localhost", any "*.localhost", RFC 6761; a
//     trailing dot changes nothing), it is 127.0.0.1 and ::1. A name that
//     needs DNS is refused before any query is sent, unless --allow-remote:
//     the name itself would leave the machine.
//   - Every address a name leads to must pass, and the connection is made to
//     the address checked, never to the name again (a second lookup could
//     lead elsewhere).
//   - A listener with no address binds to 127.0.0.1 on a free port; one on
//     every interface (":6432", "0.0.0.0:6432", "[::]:6432") or on a
//     non-loopback address is refused unless --allow-remote.
//
// A scenario file cannot open the gate: only the command line can (the
// harness turns a file's target.allow_remote into a demand for the flag).
//
// Exported API:
//
//   - [Gate], [Config], [New], [Loopback]: [Gate.AllowRemote],
//     [Gate.Resolve], [Gate.Dial], [Gate.For] (a [Way]: DialContext,
//     LookupHost and CheckRedirect bound to one setting, for http.Transport,
//     pgconn and other clients), [Gate.HTTPClient], [Gate.PinURL],
//     [Gate.ListenAddr], [Gate.Listen], [Gate.CheckDSN].
//   - [Resolver]: the DNS lookup used only with --allow-remote.
//   - [DSNForm], [Endpoint], [RegisterDSN], [Endpoints], [Scheme],
//     [CheckDSNForm] (validation: a linked form parses it): the forms of
//     database DSN (each driver registers how to list the hosts of its
//     DSNs; Postgres's is registered by the sql oracle).
//   - [Published], [PublishIP], [DockerHost]: the addresses docker publishes
//     and the daemon the harness talks to.
//   - [LoopbackName]: the offline part of the rules (no hosts file), for
//     validate.
//   - [NotLoopbackError], [ErrNotLoopback].
package addrgate
