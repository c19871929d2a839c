package modtidy_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGoModIsTidy runs `go mod tidy -diff`, which prints the change tidy
// would make and exits non-zero when there is one, without writing.
func TestGoModIsTidy(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	require.NoError(t, err, "go env GOMOD")
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	cmd := exec.CommandContext(ctx, "go", "mod", "tidy", "-diff")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go mod tidy would change go.mod/go.sum; run `go mod tidy` and commit:\n%s", out)
}
