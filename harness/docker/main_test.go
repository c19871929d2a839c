package docker_test

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

// The docker tests run for real wherever `go test ./...` runs. A machine
// without Docker opts out explicitly; an unreachable daemon is a failure
// with one line saying how to start it, never a silent skip.
const optOut = "IDEMCHAOS_DOCKER_TESTS"

var shared struct {
	once   sync.Once
	client *dockerenv.Client
	images dockerenv.Images
	err    error
}

// images connects to the daemon and builds the local images once per test
// binary (cached across runs by content hash).
func images(t *testing.T) (*dockerenv.Client, dockerenv.Images) {
	t.Helper()
	if os.Getenv(optOut) == "0" {
		t.Skipf("%s=0: docker tests switched off on this machine", optOut)
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		shared.client, shared.err = dockerenv.Connect(ctx)
		if shared.err != nil {
			shared.err = fmt.Errorf("%w; or set %s=0 to skip the docker tests on a machine without Docker", shared.err, optOut)
			return
		}
		shared.images, shared.err = shared.client.BuildImages(ctx, dockerenv.BuildOptions{})
	})
	if shared.err != nil {
		require.FailNow(t, shared.err.Error())
	}
	return shared.client, shared.images
}
