package bench_test

import (
	"os"
	"testing"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
	"github.com/idemchaos/idemchaos/harness"
)

func TestMain(m *testing.M) {
	// The reference service and consumer run as copies of this test binary.
	harness.MaybeChild()
	// So does the consumers section's consumer.
	bench.MaybeConsumer()
	os.Exit(m.Run())
}
