package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The burners really run (stress-ng children of this process when it is
// installed, else locked threads spinning) and stop with stop.
func TestStartLoad_BurnersRunAndStop(t *testing.T) {
	how, stop, err := startLoad()
	if err != nil {
		t.Fatal(err)
	}
	if _, lerr := exec.LookPath("stress-ng"); lerr != nil {
		// No stress-ng here: the Go burners say so, and stop returns.
		if !strings.Contains(how, "Go CPU burners") {
			t.Fatalf("how %q", how)
		}
		stop()
		return
	}
	kids := stressChildren()
	if len(kids) < LoadBurners || !strings.Contains(how, "stress-ng --cpu 1") {
		stop()
		t.Fatalf("%q: %d stress-ng children, want %d", how, len(kids), LoadBurners)
	}
	stop()
	if left := stressChildren(); len(left) > 0 {
		t.Fatalf("stress-ng children left after stop: %v", left)
	}
}

// stressChildren lists live stress-ng processes whose parent is this one.
func stressChildren() []string {
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
		if len(f) > 1 && f[1] == me && f[0] != "Z" && strings.Contains(s[:i], "stress-ng") {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}
