package runenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// MarkerName is the file that marks a directory as an idemchaos run directory.
// It holds a JSON [marker] and is flock(2)ed by the owning process for the
// life of the run.
const MarkerName = ".idemchaos-run"

// marker is the content of the marker file; it is for humans and for the
// reaper's log, the lock is what decides whether the owner is alive.
type marker struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Command string    `json:"command"`
}

// Options configures [Open]. The zero value is ready to use.
type Options struct {
	// Base is the parent of run directories. Empty means [ChooseBase], or
	// [DiskBase] with Disk; then every one of [Bases] is reaped, not only
	// the one the run goes to.
	Base string
	// Disk puts the run under [DiskBase] (when Base is empty): it will
	// hold files too large for memory.
	Disk bool
	// NoReap skips reaping stale run directories.
	NoReap bool
	// Logf, if set, receives one line per reaped directory, and the line
	// saying that /dev/shm was passed over for lack of room (which goes to
	// stderr when Logf is nil: the user must learn where the runs went).
	Logf func(format string, args ...any)

	_ struct{}
}

// Run is one run directory, locked by this process until [Run.Close].
type Run struct {
	dir  string
	lock *os.File

	mu       sync.Mutex
	closed   bool
	seq      int
	nextID   int
	closers  map[int]func(context.Context) error
	closeErr error
	done     chan struct{}
}

// Open reaps stale run directories (unless opts.NoReap: under opts.Base
// when set, else under every one of [Bases]) and creates a new run directory, locked by this process. The directory is mode
// 0755 so that a server running as another OS user can reach the
// subdirectories it is given.
func Open(ctx context.Context, opts Options) (*Run, error) {
	base, reap := opts.Base, []string{opts.Base}
	switch {
	case base != "":
	case opts.Disk:
		base, reap = DiskBase(), Bases()
	default:
		reap = Bases()
		var note string
		if base, note = ChooseBase(); note != "" {
			if opts.Logf != nil {
				opts.Logf("%s", note)
			} else {
				fmt.Fprintln(os.Stderr, "idemchaos:", note)
			}
		}
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("create run base: %w", err)
	}
	// MkdirAll honours the umask; the base must be traversable by the
	// database user.
	if err := os.Chmod(base, 0o755); err != nil {
		return nil, fmt.Errorf("chmod run base: %w", err)
	}
	if !opts.NoReap {
		reaped, err := reapBases(ctx, reap)
		for _, d := range reaped {
			if opts.Logf != nil {
				opts.Logf("reaped stale run directory %s", d)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("reap stale runs: %w", err)
		}
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("random run name: %w", err)
	}
	dir := filepath.Join(base, fmt.Sprintf("run-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:])))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("chmod run directory: %w", err)
	}
	lock, err := writeMarker(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &Run{dir: dir, lock: lock, closers: map[int]func(context.Context) error{}, done: make(chan struct{})}, nil
}

// writeMarker creates the marker under a temporary name, locks it, and only
// then renames it into place, so the reaper can never see an unlocked marker
// of a live run.
func writeMarker(dir string) (*os.File, error) {
	tmp := filepath.Join(dir, MarkerName+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create run marker: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock run marker: %w", err)
	}
	exe, _ := os.Executable()
	if err := json.NewEncoder(f).Encode(marker{PID: os.Getpid(), Started: time.Now().UTC(), Command: exe}); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write run marker: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, MarkerName)); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("install run marker: %w", err)
	}
	return f, nil
}

// Dir is the absolute path of the run directory.
func (r *Run) Dir() string { return r.dir }

// Done is closed once [Run.Close] has finished.
func (r *Run) Done() <-chan struct{} { return r.done }

// NewDir creates a fresh subdirectory of the run directory, named prefix plus
// a sequence number (short names keep Unix socket paths under the ~107 byte
// limit). If uid is not -1 the directory is chowned to uid:gid.
func (r *Run) NewDir(prefix string, uid, gid int) (string, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return "", ErrClosed
	}
	r.seq++
	dir := filepath.Join(r.dir, fmt.Sprintf("%s%d", prefix, r.seq))
	r.mu.Unlock()
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if uid != -1 {
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	return dir, nil
}

// OnClose registers fn to run when the run closes, before the directory is
// removed. Closers run in reverse registration order. The returned function
// unregisters fn (call it when the resource was closed on its own).
func (r *Run) OnClose(fn func(ctx context.Context) error) (unregister func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	id := r.nextID
	r.closers[id] = fn
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.closers, id)
	}
}

// Close runs the registered closers, removes the run directory and releases
// the lock. It is idempotent; later calls wait for the first and return its
// result.
func (r *Run) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		select {
		case <-r.done:
			return r.closeErr
		case <-ctx.Done():
			return fmt.Errorf("close run: %w", ctx.Err())
		}
	}
	r.closed = true
	ids := make([]int, 0, len(r.closers))
	for id := range r.closers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	fns := make([]func(context.Context) error, 0, len(ids))
	for _, id := range ids {
		fns = append(fns, r.closers[id])
	}
	r.closers = map[int]func(context.Context) error{}
	r.mu.Unlock()

	var errs []error
	for _, fn := range fns {
		if err := fn(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// Kill anything of ours a closer missed, so RemoveAll does not race a
	// live server writing into the tree.
	if _, err := killPostmasters(ctx, r.dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(r.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove run directory: %w", err))
	}
	_ = r.lock.Close()
	r.closeErr = errors.Join(errs...)
	close(r.done)
	return r.closeErr
}
