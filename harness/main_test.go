package harness_test

import (
	"os"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
)

func TestMain(m *testing.M) {
	// The reference service and consumer run as copies of this test binary.
	harness.MaybeChild()
	// The client under test of the client runs' tests is this binary too.
	if mode := os.Getenv(testClientEnv); mode != "" {
		os.Exit(testClient(mode))
	}
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	os.Exit(code)
}
