package archtest

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The third-party packages a program that imports harness links are
// bounded twice. maxHarnessDeps is issue #21's measure: the packages whose
// path starts with one dotted element (`go list -deps ./harness | grep -E
// '^[a-z0-9-]+\.[a-z]+/'`), 149 before the docker environment left for
// harness/docker and 87 after. That measure misses paths like
// google.golang.org/protobuf (29 packages, which the in-process
// Toxiproxy's Prometheus metrics bring): maxHarnessDepsAll counts every
// package outside the standard library and this module, 178 before and
// 116 after, so that nothing new (a gRPC client, say) hides there.
const (
	maxHarnessDeps    = 100
	maxHarnessDepsAll = 120
)

// issueMeasure is the pattern of issue #21's count.
var issueMeasure = regexp.MustCompile(`^[a-z0-9-]+\.[a-z]+/`)

// dockerSDK are the module paths of the Docker SDK and what it drags in:
// only harness/docker (and the command, which imports it) may link them.
var dockerSDK = []string{"github.com/docker/", "github.com/ory/dockertest", "github.com/moby/", "github.com/containerd/",
	"github.com/opencontainers/"}

// deps lists the packages pkg links (go list -deps), split into the
// module's own and the third-party ones (the standard library left out).
func deps(t *testing.T, pkg string) (own, third []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "./"+pkg)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps ./%s: %v\n%s", pkg, err, stderr)
	}
	for _, p := range strings.Fields(string(out)) {
		switch {
		case p == module || strings.HasPrefix(p, module+"/"):
			own = append(own, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
		case !stdlib(p):
			third = append(third, p)
		}
	}
	return own, third
}

func isDockerSDK(p string) bool {
	for _, d := range dockerSDK {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// A user's Go test that imports harness for the local or external
// environment links no Docker SDK, no benchmark peer and no wing of the
// command, and at most maxHarnessDeps third-party packages: a library's
// import graph is its promise (STYLE 45).
func TestDeps_HarnessLinksNoDockerAndFewPackages(t *testing.T) {
	t.Parallel()
	own, third := deps(t, "harness")
	if len(third) < 10 {
		t.Fatalf("harness links %d third-party packages: the listing did not work (%v)", len(third), third)
	}
	for _, p := range third {
		if isDockerSDK(p) || strings.HasPrefix(p, "github.com/tsenart/vegeta") {
			t.Errorf("harness links %s: it belongs to harness/docker or to the command's benchmarks, never to the library", p)
		}
	}
	for _, p := range own {
		if p == "harness/docker" || p == "internal/dockerenv" || strings.HasPrefix(p, "cmd/") || strings.HasPrefix(p, "examples/") {
			t.Errorf("harness links %s of this module: only the command links it", p)
		}
	}
	var measured []string
	for _, p := range third {
		if issueMeasure.MatchString(p) {
			measured = append(measured, p)
		}
	}
	if len(measured) > maxHarnessDeps {
		t.Errorf("harness links %d third-party packages by issue #21's measure, more than %d:\n%s", len(measured), maxHarnessDeps, strings.Join(measured, "\n"))
	}
	if len(third) > maxHarnessDepsAll {
		t.Errorf("harness links %d third-party packages in all, more than %d:\n%s", len(third), maxHarnessDepsAll, strings.Join(third, "\n"))
	}
	t.Logf("harness links %d third-party packages (%d by issue #21's measure)", len(third), len(measured))
}

// The docker environment's package is where the Docker SDK went: the
// check above would see it if harness imported it.
func TestDeps_DockerLivesInHarnessDocker(t *testing.T) {
	t.Parallel()
	_, third := deps(t, "harness/docker")
	for _, p := range third {
		if isDockerSDK(p) {
			return
		}
	}
	t.Fatalf("harness/docker links no package of %v: the list of Docker SDK paths is out of date", dockerSDK)
}
