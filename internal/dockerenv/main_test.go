package dockerenv_test

import (
	"testing"

	"github.com/idemchaos/idemchaos/internal/dockerenv"
	"github.com/idemchaos/idemchaos/internal/dockerenvtest"
)

// images connects to the daemon and builds the local images once per test
// binary; see dockerenvtest.
func images(t *testing.T) (*dockerenv.Client, dockerenv.Images) {
	t.Helper()
	return dockerenvtest.Images(t)
}
