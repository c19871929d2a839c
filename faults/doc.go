// Package faults makes the bad days of DESIGN §5 happen: each fault kind
// lives in its own file and registers itself by its DESIGN name from init(),
// the way Toxiproxy registers its toxics.
//
// The exported API:
//
//   - [Fault]: Kind, Validate, Apply and Heal — the core contract.
//   - [Aimed]: the optional ability to hit single attempts; an aimed attempt
//     travels on its own connection through its own faulted path ([Route]).
//   - [Clicker]: the optional ability to shape the plan (double clicks).
//   - [World]: what faults act on — the network links, the processes, the
//     failpoints, the standby, the recorder and the run's seeded random
//     source. The harness implements it for each environment.
//   - [Register], [New], [Kinds]: the registry. New hands out a fresh value
//     for every use, so no state leaks between steps or runs.
//   - The kinds: [ResponseDrop], [Latency], [SlowDB], [Gateway5xx],
//     [DoubleClick], [RateLimit], [Crash], [ConsumerRestart], [ReplicaLag],
//     [RetentionExpiry].
//
// Every wait inside a fault honours its context, and every firing writes a
// fault event to the history.
package faults
