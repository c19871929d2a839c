// Package rabbitmq is the RabbitMQ broker kind: a throwaway node per run,
// started from Debian's rabbitmq-server binaries (RabbitMQ 3.10 on Erlang
// 25 here), its directories, cookie, node name and ports its own so that
// runs overlap. A program that imports it can run consumer scenarios with
// `broker: {kind: rabbitmq}`; the idemchaos command links it, a Go test
// links it with
//
//	import _ "github.com/idemchaos/idemchaos/harness/broker/rabbitmq"
//
// What a node is: the AMQP listener on the run's gate-checked address
// (loopback), the Erlang distribution and a port mapper (epmd) of its own
// (ERL_EPMD_PORT), both bound to 127.0.0.1, no plugin (none of them
// listens anywhere else). Its RABBITMQ_HOME is its own too, whose code path
// holds only rabbit's applications, and its modules are loaded in parallel
// while it boots (apps.go: a start took 7.5 s here before, 3 s since). As
// root it runs as Debian's rabbitmq user. Its
// epmd is the harness's child in the foreground, and the VM is started the
// way systemd starts it (NOTIFY_SOCKET): the start script then execs the VM
// in its own place, the VM is the harness's child with its parent-death
// signal, and READY=1 on the run's notify socket is the readiness signal.
// Close stops both process groups and reaps what the VM started outside
// them (its port helper runs in a session of its own).
//
// What a consumer is given (see [Broker.Env]): an amqp:// URL and the name
// of one durable quorum queue, [Queue]. A quorum queue counts the
// deliveries of a message (x-delivery-count, from the second delivery on),
// so a redelivery is something the broker reported; its x-delivery-limit
// is [broker.Options.MaxDeliver] − 1, past which the node dead-letters the
// message into [DeadQueue] (x-death reason delivery_limit: RabbitMQ 3.10
// does at the limit+1st delivery, so at most MaxDeliver), which [Broker.Deliveries]
// reads as the node's record that it gave up on it. The consumer sets its
// own prefetch (basic.qos) and acknowledges manually; a basic.nack or
// basic.reject with requeue is a nak (it settles nothing), without
// requeue a terminate (the node dead-letters it too).
//
// RabbitMQ has no per-message ack wait: it delivers an unacknowledged
// message again when the consumer's channel or connection closes — a
// consumer killed, or one the broker cuts off after consumer_timeout
// without an ack. [broker.Options.AckWait] is that consumer_timeout, but
// never under a minute: the node checks it once a minute (a 1 s timeout
// cut a stuck consumer off after 60 s here). The delivery faults kill the
// consumer, and its connection dies with it: the redelivery is at once.
//
// RabbitMQ has no dedupe either: the harness sends [broker.Message.DedupeID]
// as the AMQP message_id, which the broker stores and never compares, so
// a producer's retry with the same id is stored twice (the point of the
// publish-twice-same-id fault here). Each stored copy carries the
// harness's number for it in the [HeaderSeq] header besides the intent and
// the business key, since AMQP gives a message no position of its own.
//
// The consumers reach the node through a hop that reads AMQP 0-9-1 frames
// (hop.go): it learns each delivery tag from basic.deliver and the content
// header's headers table, and hands every basic.ack (and reject or nack)
// to [Broker.OnAck]'s hook before the node sees it; [Broker.Acks] is what
// the hop passed on to the node.
//
// RabbitMQ has no restart in place here: a node takes seconds to stop and
// start, so the broker-restart fault is NATS's and Redis's.
//
// Exported API: [Start], [Broker] ([Broker.Deliveries]), [Kind], [Queue], [DeadQueue], [HeaderSeq], the
// environment variable names, [ErrNotInstalled], [ErrNoServerUser],
// [ErrNotTraversable].
package rabbitmq
