package runenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Reap removes every stale run directory directly under base and returns the
// directories it removed. A directory is stale when it carries the
// [MarkerName] file and the marker's lock can be taken (its owner is dead).
// Before removing one, Reap kills every Postgres server still running from it
// (matched by postmaster.pid and the server's working directory, so a reused
// PID is never killed) and removes the System V shared memory segment the
// server registered.
func Reap(ctx context.Context, base string) ([]string, error) {
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read run base: %w", err)
	}
	var reaped []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		ok, err := reapOne(ctx, dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("reap %s: %w", dir, err))
		}
		if ok {
			reaped = append(reaped, dir)
		}
	}
	return reaped, errors.Join(errs...)
}

// ReapAll reaps every one of [Bases]: what any run of this user killed
// outright (SIGKILL, a crash, a power cut) left, wherever it went.
func ReapAll(ctx context.Context) ([]string, error) { return reapBases(ctx, Bases()) }

func reapBases(ctx context.Context, bases []string) ([]string, error) {
	var reaped []string
	var errs []error
	for _, b := range bases {
		r, err := Reap(ctx, b)
		reaped = append(reaped, r...)
		errs = append(errs, err)
	}
	return reaped, errors.Join(errs...)
}

// reapOne reaps dir if it is a stale run directory.
func reapOne(ctx context.Context, dir string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, MarkerName), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // not ours, or a live run still installing its marker
	}
	if err != nil {
		return false, fmt.Errorf("open marker: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil // owner alive
		}
		return false, fmt.Errorf("lock marker: %w", err)
	}
	if _, err := killPostmasters(ctx, dir); err != nil {
		return false, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("remove: %w", err)
	}
	return true, nil
}

// postmaster is what postmaster.pid tells about a server.
type postmaster struct {
	pid     int
	dataDir string
	shmID   int // -1 if unknown
}

// readPostmasterPID parses a postmaster.pid file: line 1 the PID, line 2 the
// data directory, line 7 the shared memory key and ID.
func readPostmasterPID(path string) (postmaster, error) {
	f, err := os.Open(path)
	if err != nil {
		return postmaster{}, err
	}
	defer f.Close()
	pm := postmaster{shmID: -1}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		switch line {
		case 1:
			pm.pid, err = strconv.Atoi(text)
			if err != nil {
				return postmaster{}, fmt.Errorf("parse %s: %w", path, err)
			}
		case 2:
			pm.dataDir = text
		case 7:
			if fields := strings.Fields(text); len(fields) == 2 {
				if id, err := strconv.Atoi(fields[1]); err == nil {
					pm.shmID = id
				}
			}
		}
	}
	return pm, sc.Err()
}

// KillServers SIGKILLs every Postgres server running from a data directory
// under root (found by postmaster.pid, confirmed by the server's working
// directory), waits for each to die, and removes the System V shared memory
// segment each registered, which a SIGKILLed postmaster cannot remove
// itself. It returns the PIDs it killed.
func KillServers(ctx context.Context, root string) ([]int, error) {
	return killPostmasters(ctx, root)
}

// killPostmasters finds every postmaster.pid under root, SIGKILLs the
// server's process group if the server is still running from that data
// directory, waits for it to die, and removes its shared memory segment. It
// returns the PIDs it killed.
func killPostmasters(ctx context.Context, root string) ([]int, error) {
	var pms []postmaster
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // a vanishing subtree is fine
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), "pg_") {
			return fs.SkipDir // inside a data directory, nothing more to find
		}
		if !d.IsDir() && d.Name() == "postmaster.pid" {
			if pm, err := readPostmasterPID(path); err == nil {
				pm.dataDir = filepath.Dir(path)
				pms = append(pms, pm)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find servers: %w", err)
	}
	var killed []int
	var errs []error
	for _, pm := range pms {
		if serverRunningFrom(pm.pid, pm.dataDir) {
			// The postmaster leads its own process group (Setpgid), so the
			// group kill reaches its backends too.
			if pgid, err := syscall.Getpgid(pm.pid); err == nil && pgid == pm.pid {
				_ = syscall.Kill(-pm.pid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pm.pid, syscall.SIGKILL)
			if err := waitGone(ctx, pm.pid); err != nil {
				errs = append(errs, err)
				continue
			}
			killed = append(killed, pm.pid)
		}
		if pm.shmID >= 0 {
			removeShm(pm.shmID)
		}
	}
	return killed, errors.Join(errs...)
}

// serverRunningFrom reports whether pid is alive (not a zombie) and has
// dataDir as its working directory, as a postmaster and its children do.
func serverRunningFrom(pid int, dataDir string) bool {
	if pid <= 0 || processGone(pid) {
		return false
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return false
	}
	want, err := filepath.EvalSymlinks(dataDir)
	if err != nil {
		want = dataDir
	}
	return cwd == want || cwd == dataDir
}

// processGone reports whether pid no longer runs: absent, or a zombie
// waiting for a parent (in a container PID 1 may never reap it).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] == 'Z' || s[i+2] == 'X'
}

// waitGone polls until pid is gone. pid is not our child, so there is no
// wait(2) to block on; the poll is short and bounded.
func waitGone(ctx context.Context, pid int) error {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !processGone(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for pid %d: %w", pid, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("pid %d survived SIGKILL", pid)
		case <-tick.C:
		}
	}
	return nil
}

// removeShm removes a System V shared memory segment left by a killed
// postmaster. Errors are ignored: the segment is usually already gone.
func removeShm(id int) {
	_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
}
