package runenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// EnvRunDir is the environment variable that moves run directories: when
// set, it is the base they are created under (it must be reachable by the
// database user when idemchaos runs as root).
const EnvRunDir = "IDEMCHAOS_RUNDIR"

// ShmMinFree is the free space /dev/shm must offer for run directories to
// go there: a whole demo peaks near 800 MB, and a container's default
// /dev/shm is 64 MB.
const ShmMinFree = 1 << 30

// shmDir is where fast run directories go when there is room.
var shmDir = "/dev/shm"

// probe is what choosing a base looks at; tests replace its parts.
type probe struct {
	shm    string
	getenv func(string) string
	free   func(path string) (uint64, error)
	tmp    func() string
}

func systemProbe() probe {
	return probe{shm: shmDir, getenv: os.Getenv, free: freeBytes, tmp: os.TempDir}
}

// freeBytes is the space an unprivileged writer may still use under path.
func freeBytes(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// choose returns the base and, when the fast place was passed over for
// lack of room, one line that says so.
func (p probe) choose() (base, note string) {
	name := fmt.Sprintf("idemchaos-%d", os.Geteuid())
	if dir := p.getenv(EnvRunDir); dir != "" {
		return dir, ""
	}
	tmp := filepath.Join(p.tmp(), name)
	st, err := os.Stat(p.shm)
	if err != nil || !st.IsDir() || syscall.Access(p.shm, 2 /* W_OK */) != nil {
		return tmp, ""
	}
	free, err := p.free(p.shm)
	if err != nil {
		return tmp, fmt.Sprintf("run directories go to %s: the free space of %s is unknown (%v); set %s to choose", p.tmp(), p.shm, err, EnvRunDir)
	}
	if free < ShmMinFree {
		return tmp, fmt.Sprintf("run directories go to %s: %s has %d MiB free, a run may need %d MiB; set %s to choose",
			p.tmp(), p.shm, free>>20, ShmMinFree>>20, EnvRunDir)
	}
	return filepath.Join(p.shm, name), ""
}

// ChooseBase returns the per-user directory under which run directories are
// created: $IDEMCHAOS_RUNDIR when set; else /dev/shm/idemchaos-<uid> when
// /dev/shm is a writable directory with [ShmMinFree] free (a tmpfs makes
// Postgres clusters fast and cheap); else $TMPDIR/idemchaos-<uid>. note is
// one line for the user when /dev/shm was passed over for lack of room.
func ChooseBase() (base, note string) { return systemProbe().choose() }

// DefaultBase is the base [ChooseBase] returns.
func DefaultBase() string {
	base, _ := ChooseBase()
	return base
}

// DiskBase is the base of runs that hold large files ([Options.Disk]: a
// history split into partitions may be as large as the history): never
// /dev/shm, whose pages are memory. It is $IDEMCHAOS_RUNDIR when set, else
// $TMPDIR/idemchaos-<uid>.
func DiskBase() string { return systemProbe().disk() }

func (p probe) disk() string {
	if dir := p.getenv(EnvRunDir); dir != "" {
		return dir
	}
	return filepath.Join(p.tmp(), fmt.Sprintf("idemchaos-%d", os.Geteuid()))
}

// Bases lists every base a run of this user may have been created under
// (by [ChooseBase] or as a disk run, whatever /dev/shm's free space was
// then), each once: where the stale runs a reaper looks for can be.
func Bases() []string { return systemProbe().bases() }

func (p probe) bases() []string {
	name := fmt.Sprintf("idemchaos-%d", os.Geteuid())
	var out []string
	for _, b := range []string{p.getenv(EnvRunDir), filepath.Join(p.shm, name), filepath.Join(p.tmp(), name)} {
		if b != "" && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}
