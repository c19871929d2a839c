package redis

import "github.com/idemchaos/idemchaos/harness/broker"

// PID is the running redis-server's process id, for the tests that check
// that none outlives its broker.
func PID(b *Broker) int { return b.srv.PID() }

// Orphan hands b acks as the link does for XACKs that got no reply.
func Orphan(b *Broker, acks ...broker.Ack) { b.orphan(acks) }
