package rabbitmq

import "context"

// Processes lists the live processes of b's node (its epmd, its VM and
// what the VM started), found by their environment.
func Processes(b *Broker) []int { return processes(b.node.name) }

// KillNode SIGKILLs the node's VM, the harness's child, as a crash would.
func KillNode(ctx context.Context, b *Broker) error { return b.node.kill(ctx) }

// Ports are the node's AMQP, distribution and epmd ports.
func Ports(b *Broker) (amqp string, dist, epmd int) { return b.node.amqp, b.node.dist, b.node.epmd }
