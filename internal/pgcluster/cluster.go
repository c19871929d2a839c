package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/internal/runenv"
)

// Config configures [Start]. The zero value starts a primary from the
// binaries [FindBinDir] finds, in the process's shared run.
type Config struct {
	// BinDir holds initdb, postgres and pg_basebackup. Empty means
	// [FindBinDir].
	BinDir string
	// Run is the run directory the cluster lives in. Nil means
	// [runenv.Shared]. The cluster registers its Close with the run, so
	// closing the run (or a signal the run handles) stops it.
	Run *runenv.Run
	// Standby makes [Start] also start one hot standby (see
	// [Cluster.Standby]) with ApplyDelay.
	Standby bool
	// ApplyDelay is the standby's initial recovery_min_apply_delay; used only
	// with Standby.
	ApplyDelay time.Duration
	// Settings are extra server settings (name → value), passed on the
	// command line to the primary. They cannot be changed with ALTER SYSTEM.
	Settings map[string]string
	// ReadyTimeout bounds each server's start. Zero means 60s.
	ReadyTimeout time.Duration

	_ struct{}
}

// Cluster is a running primary and the standbys started from it.
type Cluster struct {
	binDir     string
	user       serverUser
	run        *runenv.Run
	dir        string
	srv        *server
	timeout    time.Duration
	unregister func()

	mu       sync.Mutex
	closed   bool
	done     chan struct{} // closed when Close has finished
	closeErr error
	standbys []*Standby
	standby  *Standby
}

// Start creates a data directory (a copy of the run's template, made by
// initdb on first use) and starts a primary on 127.0.0.1 on a free port. It
// returns once a real connection succeeds.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	binDir := cfg.BinDir
	if binDir == "" {
		var err error
		if binDir, err = FindBinDir(ctx); err != nil {
			return nil, err
		}
	}
	run := cfg.Run
	if run == nil {
		var err error
		if run, err = runenv.Shared(ctx); err != nil {
			return nil, fmt.Errorf("open run directory: %w", err)
		}
	}
	// Fail before initdb if the directory is too deep for a Unix socket.
	if err := checkSocketPath(filepath.Join(run.Dir(), "p0000")); err != nil {
		return nil, err
	}
	u, err := lookupServerUser()
	if err != nil {
		return nil, err
	}
	if err := u.checkTraversable(run.Dir()); err != nil {
		return nil, err
	}
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	tmpl, err := templateDataDir(ctx, run, binDir, u)
	if err != nil {
		return nil, err
	}
	dir, err := run.NewDir("p", u.uid, u.gid)
	if err != nil {
		return nil, fmt.Errorf("cluster directory: %w", err)
	}
	dataDir := filepath.Join(dir, "data")
	if err := copyTree(tmpl, dataDir, u); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("copy template: %w", err)
	}
	srv, err := startServer(ctx, serverSpec{binDir: binDir, user: u, dataDir: dataDir, sockDir: dir,
		logPath: filepath.Join(dir, "postgres.log"), settings: cfg.Settings, timeout: timeout})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start primary: %w", err)
	}
	c := &Cluster{binDir: binDir, user: u, run: run, dir: dir, srv: srv, timeout: timeout, done: make(chan struct{})}
	c.unregister = run.OnClose(c.Close)
	if cfg.Standby {
		sb, err := c.StartStandby(ctx, cfg.ApplyDelay)
		if err != nil {
			_ = c.Close(context.Background())
			return nil, err
		}
		c.standby = sb
	}
	return c, nil
}

// DSN is a libpq URL for user postgres, database postgres, over TCP on
// 127.0.0.1.
func (c *Cluster) DSN() string { return c.srv.dsn("postgres") }

// Port is the primary's TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.srv.port }

// Addr is the primary's host:port, for putting a proxy in front of it.
func (c *Cluster) Addr() string { return fmt.Sprintf("127.0.0.1:%d", c.srv.port) }

// DataDir is the primary's data directory.
func (c *Cluster) DataDir() string { return c.srv.dataDir }

// PID is the postmaster's process ID.
func (c *Cluster) PID() int { return c.srv.cmd.Process.Pid }

// LogPath is the primary's server log.
func (c *Cluster) LogPath() string { return c.srv.logPath }

// Standby is the standby [Config.Standby] asked for, or nil.
func (c *Cluster) Standby() *Standby {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.standby
}

// Exited says whether the primary's postmaster has exited (killed from
// outside, crashed) and how, nil while it runs: a run that failed can tell
// the harness's own database dying from the service's fault.
func (c *Cluster) Exited() error {
	select {
	case <-c.srv.exited:
		if c.srv.waitErr != nil {
			return fmt.Errorf("postgres (pid %d) exited: %w", c.srv.cmd.Process.Pid, c.srv.waitErr)
		}
		return fmt.Errorf("postgres (pid %d) exited", c.srv.cmd.Process.Pid)
	default:
		return nil
	}
}

// DSNFor is the DSN of database db on the primary.
func (c *Cluster) DSNFor(db string) string { return c.srv.dsn(db) }

// CreateDatabase creates a fresh empty database called name and returns its
// DSN. Name is quoted as an identifier, so any string is accepted.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	if err := c.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return c.srv.dsn(name), nil
}

// DropDatabase drops database name, terminating its connections. A missing
// database is not an error.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	if err := c.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// exec runs one statement on the primary's postgres database.
func (c *Cluster) exec(ctx context.Context, sql string) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	return err
}

// Close stops the standbys and the primary (immediate shutdown) and removes
// their directories. It is idempotent.
func (c *Cluster) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return waitClosed(ctx, c.done, &c.closeErr)
	}
	c.closed = true
	standbys := c.standbys
	c.standbys = nil
	c.mu.Unlock()
	c.unregister()
	var errs []error
	for _, sb := range standbys {
		errs = append(errs, sb.Close(ctx))
	}
	errs = append(errs, c.srv.stop(ctx))
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove cluster directory: %w", err))
	}
	c.closeErr = errors.Join(errs...)
	close(c.done)
	return c.closeErr
}

// waitClosed waits for a concurrent Close to finish and returns its result.
func waitClosed(ctx context.Context, done <-chan struct{}, err *error) error {
	select {
	case <-done:
		return *err
	case <-ctx.Done():
		return fmt.Errorf("wait for close: %w", ctx.Err())
	}
}
