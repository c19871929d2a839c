package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirTB is a TB whose failure lasts through its cleanups, as testing.T's.
type dirTB struct {
	TB
	name   string
	failed bool
	logs   []string
	clean  []func()
}

func (d *dirTB) Name() string                 { return d.name }
func (d *dirTB) Failed() bool                 { return d.failed }
func (d *dirTB) Cleanup(f func())             { d.clean = append(d.clean, f) }
func (d *dirTB) Logf(format string, a ...any) { d.logs = append(d.logs, fmt.Sprintf(format, a...)) }

// TestHistoryDir_PerTestKeptAndPrintedOnFailure: each test of the Go API
// gets a directory of its own under the temp dir, named for it; a failing
// test's is kept and its path printed, a passing test's removed — never
// another test's (they used to share one directory, pruned across users).
func TestHistoryDir_PerTestKeptAndPrintedOnFailure(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	failing := &dirTB{name: "TestOrders/seed 3", failed: true}
	passing := &dirTB{name: "TestOrders/seed 4"}
	fd, pd := historyDir(failing), historyDir(passing)
	if fd == pd || filepath.Dir(fd) != os.TempDir() || !strings.Contains(filepath.Base(fd), "TestOrders_seed_3") {
		t.Fatalf("directories %s and %s: want one per test under %s, named for it", fd, pd, os.TempDir())
	}
	for _, d := range []*dirTB{failing, passing} {
		for _, f := range d.clean {
			f()
		}
	}
	if _, err := os.Stat(fd); err != nil {
		t.Errorf("the failing test's histories were removed: %v", err)
	}
	if len(failing.logs) != 1 || !strings.Contains(failing.logs[0], fd) {
		t.Errorf("the failing test's directory not printed: %q", failing.logs)
	}
	if _, err := os.Stat(pd); !os.IsNotExist(err) {
		t.Errorf("the passing test's histories were kept: %v", err)
	}
}
