package pgcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Standby is a streaming hot standby of a [Cluster].
type Standby struct {
	primary *Cluster
	dir     string
	srv     *server

	mu       sync.Mutex
	closed   bool
	done     chan struct{} // closed when Close has finished
	closeErr error
}

// StartStandby takes a base backup of the primary (pg_basebackup -R -X
// stream, with a fast checkpoint) and starts it as a hot standby that
// applies WAL applyDelay after the primary committed it
// (recovery_min_apply_delay). The delay lives in postgresql.auto.conf, so
// [Standby.SetApplyDelay] can change it at run time.
func (c *Cluster) StartStandby(ctx context.Context, applyDelay time.Duration) (*Standby, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	dir, err := c.run.NewDir("s", c.user.uid, c.user.gid)
	if err != nil {
		return nil, fmt.Errorf("standby directory: %w", err)
	}
	dataDir := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "postgres.log")
	if err := c.baseBackup(ctx, dataDir, logPath); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	auto, err := os.OpenFile(filepath.Join(dataDir, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("open standby postgresql.auto.conf: %w", err)
	}
	_, werr := fmt.Fprintf(auto, "recovery_min_apply_delay = '%dms'\n", applyDelay.Milliseconds())
	if cerr := auto.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("set apply delay: %w", werr)
	}
	srv, err := startServer(ctx, serverSpec{binDir: c.binDir, user: c.user, dataDir: dataDir, sockDir: dir,
		logPath: logPath, timeout: c.timeout})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start standby: %w", err)
	}
	sb := &Standby{primary: c, dir: dir, srv: srv, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = sb.Close(ctx)
		return nil, ErrClosed
	}
	c.standbys = append(c.standbys, sb)
	c.mu.Unlock()
	return sb, nil
}

// baseBackup runs pg_basebackup as the server user.
func (c *Cluster) baseBackup(ctx context.Context, dataDir, logPath string) error {
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("open standby log: %w", err)
	}
	defer logf.Close()
	if err := c.user.chown(logPath); err != nil {
		return fmt.Errorf("chown standby log: %w", err)
	}
	cmd := c.user.command(ctx, filepath.Join(c.binDir, "pg_basebackup"),
		"-D", dataDir, "-R", "-X", "stream", "-c", "fast", "--no-sync",
		"-h", "127.0.0.1", "-p", strconv.Itoa(c.srv.port), "-U", "postgres")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = filepath.Dir(dataDir)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pg_basebackup: %w: %s", err, logTail(logPath))
	}
	return nil
}

// DSN is a libpq URL for user postgres, database postgres on the standby.
func (s *Standby) DSN() string { return s.srv.dsn("postgres") }

// DSNFor is the DSN of database db on the standby.
func (s *Standby) DSNFor(db string) string { return s.srv.dsn(db) }

// Port is the standby's TCP port on 127.0.0.1.
func (s *Standby) Port() int { return s.srv.port }

// Addr is the standby's host:port.
func (s *Standby) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.srv.port) }

// PID is the standby postmaster's process ID.
func (s *Standby) PID() int { return s.srv.cmd.Process.Pid }

// SetApplyDelay changes recovery_min_apply_delay at run time (ALTER SYSTEM
// on the standby, then pg_reload_conf). The startup process recomputes its
// wait after the reload, so lowering the delay releases held-back WAL
// promptly. Returns once the new value is in effect for new sessions.
func (s *Standby) SetApplyDelay(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return fmt.Errorf("set apply delay: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if err := ApplyDelay(ctx, conn, d); err != nil {
		return err
	}
	// The reload is asynchronous; wait until this backend sees the new
	// value, which it reads from the same files at the same signal as the
	// startup process.
	for {
		var ms int64
		err := conn.QueryRow(ctx, "SELECT setting::bigint FROM pg_settings WHERE name = 'recovery_min_apply_delay'",
			pgx.QueryExecModeSimpleProtocol).Scan(&ms)
		if err != nil {
			return fmt.Errorf("set apply delay: read back: %w", err)
		}
		if ms == d.Milliseconds() {
			return nil
		}
		t := time.NewTimer(readyPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("set apply delay: wait for reload: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// ApplyDelay sets recovery_min_apply_delay on the standby conn is
// connected to: ALTER SYSTEM, then pg_reload_conf. The reload is
// asynchronous: the new value may not be in effect yet when it returns
// ([Standby.SetApplyDelay] waits for it).
func ApplyDelay(ctx context.Context, conn *pgx.Conn, d time.Duration) error {
	want := fmt.Sprintf("%dms", d.Milliseconds())
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET recovery_min_apply_delay = '"+want+"'", pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("set apply delay: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()", pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("set apply delay: reload: %w", err)
	}
	return nil
}

// Close stops the standby (immediate shutdown) and removes its directory.
// It is idempotent.
func (s *Standby) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return waitClosed(ctx, s.done, &s.closeErr)
	}
	s.closed = true
	s.mu.Unlock()
	err := s.srv.stop(ctx)
	if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
		err = fmt.Errorf("remove standby directory: %w", rerr)
	}
	s.closeErr = err
	close(s.done)
	return err
}

// CatchUp returns once the standby has replayed everything the primary
// had inserted into its WAL when it was called (the insert position: with
// synchronous_commit off a commit may not be written yet, and the WAL
// writer sends it within its 10 ms): a database created and migrated on the
// primary a moment ago is then there on the standby too. A service started
// with a replica DSN before that pings a database the standby does not
// have yet (seen under load: FATAL database "run_…" does not exist).
func (s *Standby) CatchUp(ctx context.Context, primary *Cluster) error {
	var lsn string
	pc, err := pgx.Connect(ctx, primary.DSN())
	if err != nil {
		return fmt.Errorf("standby catch-up: connect to the primary: %w", err)
	}
	err = pc.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text", pgx.QueryExecModeSimpleProtocol).Scan(&lsn)
	pc.Close(context.Background())
	if err != nil {
		return fmt.Errorf("standby catch-up: %w", err)
	}
	sc, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return fmt.Errorf("standby catch-up: connect: %w", err)
	}
	defer sc.Close(context.Background())
	for {
		var done bool
		err := sc.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= '"+lsn+"'::pg_lsn, false)", pgx.QueryExecModeSimpleProtocol).Scan(&done)
		if err != nil {
			return fmt.Errorf("standby catch-up: %w", err)
		}
		if done {
			return nil
		}
		t := time.NewTimer(readyPoll) // the standby has no signal to wait on
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("standby catch-up to %s: %w", lsn, ctx.Err())
		case <-t.C:
		}
	}
}
