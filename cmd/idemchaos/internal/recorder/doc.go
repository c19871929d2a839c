// Package recorder is a reverse proxy that writes every request through it,
// and what became of it, as an idemchaos history (JSONL, format v1): real
// clients' retries, double clicks and callbacks, judged afterwards by
// `idemchaos check` like a run.
//
// What a proxy cannot know it leaves out: intents (each (tenant, key) is
// its own intent), attempt numbers. What it can know it records as the
// driver does: an attempt the upstream provably never saw (no connection
// was made) is fail; one that got no whole response after the request went
// out (a timeout, a reset) is info, since the server may have executed it.
package recorder
