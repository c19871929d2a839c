package clients_test

import (
	"os"
	"testing"

	"github.com/idemchaos/idemchaos/harness"
)

func TestMain(m *testing.M) {
	// The reference upstream of the client scenarios runs as a copy of
	// this test binary.
	harness.MaybeChild()
	os.Exit(m.Run())
}
