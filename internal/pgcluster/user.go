package pgcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// serverUser is who the server runs as: the current user, or the "postgres"
// OS user when we are root.
type serverUser struct {
	uid, gid int
	cred     *syscall.Credential // nil when no switch is needed
}

// lookupServerUser decides who runs initdb, postgres and pg_basebackup.
func lookupServerUser() (serverUser, error) {
	if os.Geteuid() != 0 {
		return serverUser{uid: -1, gid: -1}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return serverUser{}, fmt.Errorf("%w: %w", ErrNoServerUser, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return serverUser{}, fmt.Errorf("parse uid of postgres: %w", err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return serverUser{}, fmt.Errorf("parse gid of postgres: %w", err)
	}
	return serverUser{
		uid:  uid,
		gid:  gid,
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true},
	}, nil
}

// sysProcAttr puts the child in its own process group (so a Ctrl-C on the
// terminal does not reach it and the harness decides the shutdown order),
// makes the kernel SIGKILL it when the harness dies, and switches user if
// needed. Go sets Pdeathsig after the credential change, so the switch does
// not clear it.
func (u serverUser) sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: u.cred,
	}
}

// command is a one-shot server tool (initdb, pg_basebackup) run as the
// server user in its own process group. A cancelled ctx kills the whole
// group: initdb's bootstrap backend and its shell are children that the
// default cancel (a kill of initdb alone) would leave running.
func (u serverUser) command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = u.sysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// checkTraversable fails with a clear error if the server user cannot reach
// dir: every ancestor must be searchable by it. A Go test's t.TempDir (mode
// 0700, owned by root) is the classic case.
func (u serverUser) checkTraversable(dir string) error {
	if u.cred == nil {
		return nil
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("check %s: %w", d, err)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		perm := st.Mode().Perm()
		searchable := perm&0o001 != 0 ||
			(ok && int(sys.Uid) == u.uid && perm&0o100 != 0) ||
			(ok && int(sys.Gid) == u.gid && perm&0o010 != 0)
		if !searchable {
			return fmt.Errorf("%w: %s (mode %v) is not traversable by the postgres user; use a run base under /dev/shm or /tmp",
				ErrNotTraversable, d, perm)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// chown gives path to the server user, if a switch is in effect.
func (u serverUser) chown(path string) error {
	if u.cred == nil {
		return nil
	}
	return os.Lchown(path, u.uid, u.gid)
}
