// Package redis is the Redis Streams broker: a throwaway redis-server
// (Debian's binary, a child process of the harness in its own process
// group, killed with the harness) per run, its append-only file in the
// run's own directory with every write fsynced before it is answered, so
// that a restart of the server loses nothing a client was told succeeded.
// It listens on loopback only, through the run's address gate. A program
// that imports it can run consumer scenarios with `broker: {kind: redis}`;
// the idemchaos command links it, a Go test links it with
//
//	import _ "github.com/idemchaos/idemchaos/harness/broker/redis"
//
// so that a test that imports only harness links no Redis client.
//
// What a consumer is given (see [Broker.Env]): the URL of its link to the
// server, one stream the harness publishes to and one consumer group on it
// that every instance of the user's consumer reads with XREADGROUP
// (competing consumers), and the ack wait. Each entry carries the
// harness's intent and business key as fields of their own
// ([broker.HeaderIntent], [broker.HeaderKey]) and the body in [FieldBody].
//
// Redis Streams have no dedupe of their own: a producer's retry is a
// second entry whatever its dedupe id ([broker.Message.DedupeID] is not
// sent), so publish-twice-same-id stores the message twice, as
// publish-twice-new-id does. Nor does Redis deliver anything again by
// itself: an entry read and never acknowledged stays in the group's
// pending list, owned by the consumer that read it, until some consumer
// claims it. The contract a consumer must keep is the standard practice:
// claim pending entries idle longer than the ack wait (XAUTOCLAIM with
// min-idle-time = IDEMCHAOS_REDIS_ACK_WAIT_MS) and process them as
// redeliveries. A consumer that never claims leaves a crashed instance's
// entry pending forever: the run ends at its drain bound with the entry
// named as never acknowledged. The broker's count of deliveries of an
// entry is the pending list's times-delivered (XREADGROUP counts 1, each
// claim one more), read when the consumer's XACK passes the link, and for
// the entries still pending at the run's end from XPENDING
// ([Broker.Deliveries]). Redis has no nak (a consumer that cannot apply an
// entry leaves it unacknowledged until a claim delivers it again), no
// max-deliver and no dead-letter stream: IDEMCHAOS_REDIS_MAX_DELIVER is
// the bound a consumer is asked to keep itself (XACK, or move it aside,
// past it), and no entry is ever exhausted by the server.
//
// Exported API: [Start], [Broker] ([Broker.Restart], [Broker.Pending], [Broker.Deliveries]),
// [Kind], the environment variable names, [Stream], [Group], [FieldBody],
// [ErrNoServer].
package redis
