package htmlpage_test

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the package's tests with a temp dir of their own and fails
// the run if anything is left in it: the browser tests start Chromium,
// which makes directories of its own in $TMPDIR.
func TestMain(m *testing.M) {
	os.Exit(leavesNothing(m))
}

func leavesNothing(m *testing.M) int {
	dir, err := os.MkdirTemp("", "report-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", dir)
	code := m.Run()
	if had {
		os.Setenv("TMPDIR", old)
	} else {
		os.Unsetenv("TMPDIR")
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		fmt.Fprintf(os.Stderr, "the tests left %d entries in $TMPDIR: %v\n", len(left), names)
		return max(code, 1)
	}
	return code
}
