// Package dockerenvtest is the test helper of the docker environment's
// tests (internal/dockerenv's and harness/docker's): the daemon reached and
// the local images built once per test binary.
//
// The docker tests run for real wherever `go test ./...` runs. A machine
// without Docker opts out explicitly ([OptOut]=0); an unreachable daemon is
// a failure with one line saying how to start it, never a silent skip.
//
// The exported API: [Images], [OptOut].
package dockerenvtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemchaos/idemchaos/internal/dockerenv"
)

// OptOut is the environment variable that, set to 0, switches the docker
// tests off on a machine without Docker.
const OptOut = "IDEMCHAOS_DOCKER_TESTS"

var shared struct {
	once   sync.Once
	client *dockerenv.Client
	images dockerenv.Images
	err    error
}

// Images connects to the daemon and builds the local images once per test
// binary (cached across runs by content hash).
func Images(t testing.TB) (*dockerenv.Client, dockerenv.Images) {
	t.Helper()
	if os.Getenv(OptOut) == "0" {
		t.Skipf("%s=0: docker tests switched off on this machine", OptOut)
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		shared.client, shared.err = dockerenv.Connect(ctx)
		if shared.err != nil {
			shared.err = fmt.Errorf("%w; or set %s=0 to skip the docker tests on a machine without Docker", shared.err, OptOut)
			return
		}
		shared.images, shared.err = shared.client.BuildImages(ctx, dockerenv.BuildOptions{})
	})
	if shared.err != nil {
		require.FailNow(t, shared.err.Error())
	}
	return shared.client, shared.images
}
