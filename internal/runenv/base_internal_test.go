package runenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Where run directories go, for each condition of /dev/shm and the
// environment: a free-space function stands in for a full tmpfs here (the
// real one is mounted in TestOpen_SmallShmFallsBackToTmp).
func TestChooseBase(t *testing.T) {
	t.Parallel()
	shm, tmp, moved := t.TempDir(), t.TempDir(), t.TempDir()
	user := fmt.Sprintf("idemchaos-%d", os.Geteuid())
	free := func(n uint64, err error) func(string) (uint64, error) {
		return func(string) (uint64, error) { return n, err }
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvRunDir {
				return v
			}
			return ""
		}
	}
	for name, c := range map[string]struct {
		p        probe
		want     string
		noteHas  []string
		wantNote bool
	}{
		"room in /dev/shm":     {probe{shm: shm, getenv: env(""), free: free(ShmMinFree, nil)}, filepath.Join(shm, user), nil, false},
		"64 MB /dev/shm":       {probe{shm: shm, getenv: env(""), free: free(64<<20, nil)}, filepath.Join(tmp, user), []string{shm, "64 MiB free", tmp, EnvRunDir}, true},
		"statfs fails":         {probe{shm: shm, getenv: env(""), free: free(0, errors.New("boom"))}, filepath.Join(tmp, user), []string{"unknown", EnvRunDir}, true},
		"no /dev/shm":          {probe{shm: filepath.Join(shm, "absent"), getenv: env(""), free: free(ShmMinFree, nil)}, filepath.Join(tmp, user), nil, false},
		"IDEMCHAOS_RUNDIR":     {probe{shm: shm, getenv: env(moved), free: free(ShmMinFree, nil)}, moved, nil, false},
		"moved, shm too small": {probe{shm: shm, getenv: env(moved), free: free(1, nil)}, moved, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			c.p.tmp = func() string { return tmp }
			base, note := c.p.choose()
			if base != c.want {
				t.Errorf("base %s, want %s", base, c.want)
			}
			if (note != "") != c.wantNote || strings.Contains(note, "\n") {
				t.Errorf("note %q: want one line: %v", note, c.wantNote)
			}
			for _, s := range c.noteHas {
				if !strings.Contains(note, s) {
					t.Errorf("note %q lacks %q", note, s)
				}
			}
		})
	}
}
