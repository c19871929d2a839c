package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The burners really run, as child processes of this one (stress-ng when
// it is installed, else shell busy loops), and stop with stop.
func TestStartLoad_BurnersRunAndStop(t *testing.T) {
	how, stop, err := startLoad()
	if err != nil {
		t.Fatal(err)
	}
	name := "sh"
	if _, lerr := exec.LookPath("stress-ng"); lerr == nil {
		name = "stress-ng"
	}
	kids := burnerChildren(name)
	if len(kids) < LoadBurners || !strings.Contains(how, name) {
		stop()
		t.Fatalf("%q: %d %s children, want %d", how, len(kids), name, LoadBurners)
	}
	stop()
	if left := burnerChildren(name); len(left) > 0 {
		t.Fatalf("%s children left after stop: %v", name, left)
	}
}

// burnerChildren lists live processes named name whose parent is this one.
func burnerChildren(name string) []string {
	var out []string
	me := strconv.Itoa(os.Getpid())
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == me && f[0] != "Z" && strings.Contains(s[:i], "("+name) {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}
