// Package proxy drives a Toxiproxy, either in-process (the toxiproxy server
// package used as a library) or an external toxiproxy-server through its
// HTTP API, behind one interface, [Server].
//
// The in-process server accepts with a loop of its own and connects each
// client upstream on its own goroutine, then runs the pair through
// Toxiproxy's links: Toxiproxy's accept loop dials upstream inside the
// loop, so in front of a full listen backlog one waiting connect held up
// every client after it.
//
// Toxics act on every connection of a proxy, and Toxiproxy rolls their
// toxicity per connection from its own random source. idemchaos owns all
// randomness, so this package always sets toxicity to 1: a fault aimed at
// one attempt gets its own proxy, and the harness decides which attempts
// travel through it.
//
// Exported API:
//
//   - [Server]: CreateProxy, AddToxic, RemoveToxic, ResetToxics, SetEnabled,
//     RemoveProxy, Close.
//   - [NewInProcess], [Connect]: the two implementations.
//   - [UpstreamReporter]: why the in-process proxy did not connect a client
//     upstream (refused, a connect still pending on a full backlog, or timed out).
//   - [Toxic], [Stream], [Upstream], [Downstream]: what a toxic is.
//   - [ErrProxyExists], [ErrProxyNotFound], [ErrToxicExists],
//     [ErrToxicNotFound], [ErrBadToxic], [ErrClosed], [ErrUnreachable].
package proxy
