package bench_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
)

// The consumers section measures on real brokers: the embedded NATS
// server's start, a consumer run whose consumer (a copy of this test
// binary) acknowledges every message, the NATS client's async publish, and
// a RabbitMQ node's start (test.sh installs rabbitmq-server: a missing one
// is a broken install, not a skip); its block says each figure against its
// target.
func TestConsumers_OneRound(t *testing.T) {
	rep, err := bench.Run(t.Context(), bench.Options{Only: []string{bench.SectionConsumers}, Repeats: 1, ConsumerMessages: 200, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sections) != 1 || rep.Sections[0].Err != "" {
		t.Fatalf("sections %+v", rep.Sections)
	}
	c := rep.Consumers
	if c == nil || c.Rounds != 1 || c.Messages != 200 {
		t.Fatalf("consumers %+v", c)
	}
	if c.NATSStart.Median <= 0 || c.Deliver.Median <= 0 || c.Publish.Median < c.Deliver.Median || c.ClientAsync.Median <= 0 {
		t.Errorf("figures %+v: want a start, and publishing alone at least as fast as the whole consumer run", c)
	}
	if c.RabbitErr != "" || c.RabbitStart.Median <= 0 {
		t.Errorf("RabbitMQ node not measured: %s", c.RabbitErr)
	}
	var md strings.Builder
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!-- idemchaos bench: consumers -->", "| embedded NATS JetStream start | ≤ 50 ms |",
		"| publish → deliver → record / the client's async publish | ≥ 0.5× |", "| RabbitMQ node ready | ≤ 5 s |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}
