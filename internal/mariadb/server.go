package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

// Config configures [Start]. The zero value starts a server from the
// binaries [FindBinaries] finds, in the process's shared run.
type Config struct {
	// Run is the run directory the server lives in. Nil means
	// [runenv.Shared]. The server registers its Close with the run.
	Run *runenv.Run
	// ReadyTimeout bounds the initialisation and the start. Zero means 2m:
	// mariadb-install-db alone takes several seconds on a busy machine.
	ReadyTimeout time.Duration

	_ struct{}
}

// Server is one running mariadbd.
type Server struct {
	cmd        *exec.Cmd
	dir        string
	port       int
	exited     chan struct{}
	waitErr    error
	unregister func()

	mu     sync.Mutex
	closed bool
	db     *sql.DB // root's pool, for CREATE and DROP DATABASE
}

// Binaries are the two programs a server needs.
type Binaries struct{ InstallDB, Server string }

// FindBinaries finds mariadb-install-db (or its old name mysql_install_db)
// and mariadbd on PATH and in the directories Debian installs them to.
func FindBinaries() (Binaries, error) {
	find := func(names ...string) string {
		for _, n := range names {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
			for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/libexec"} {
				p := filepath.Join(d, n)
				if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return p
				}
			}
		}
		return ""
	}
	b := Binaries{InstallDB: find("mariadb-install-db", "mysql_install_db"), Server: find("mariadbd", "mysqld")}
	if b.InstallDB == "" || b.Server == "" {
		return b, ErrNoBinaries
	}
	return b, nil
}

// serverUser is who runs the server: the current user, or "mysql" as root
// (mariadbd refuses to run as root without --user, and a test server has
// no business owning root's files).
func serverUser() (cred *syscall.Credential, uid, gid int, err error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %w", ErrNoServerUser, err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, uid, gid, nil
}

// maxPortAttempts bounds retries when another process takes the free port
// between the probe and the server's bind.
const maxPortAttempts = 5

// Start initialises a data directory with mariadb-install-db and starts
// mariadbd on 127.0.0.1 on a free port. It returns once a real connection
// succeeds.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	bins, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	run := cfg.Run
	if run == nil {
		if run, err = runenv.Shared(ctx); err != nil {
			return nil, fmt.Errorf("open run directory: %w", err)
		}
	}
	timeout := cfg.ReadyTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cred, uid, gid, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := run.NewDir("m", uid, gid)
	if err != nil {
		return nil, err
	}
	install := exec.CommandContext(ctx, bins.InstallDB, append([]string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"),
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"}, sizing...)...)
	install.Dir = dir
	install.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	install.Cancel = func() error { return syscall.Kill(-install.Process.Pid, syscall.SIGKILL) }
	install.WaitDelay = 5 * time.Second
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, tail(string(out)))
	}
	var last error
	for range maxPortAttempts {
		port, err := netaddr.FreePort()
		if err != nil {
			return nil, fmt.Errorf("find free port: %w", err)
		}
		s, err := launch(bins.Server, dir, port, cred)
		if err != nil {
			return nil, err
		}
		if err = s.waitReady(ctx); err == nil {
			s.unregister = run.OnClose(s.Close)
			return s, nil
		}
		s.kill()
		last = err
		if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "Address already in use") {
			return nil, err
		}
	}
	return nil, last
}

// sizing keeps a test server small: a 4 MB redo log instead of 96 MB, a
// 16 MB buffer pool; a data directory of about 20 MB.
var sizing = []string{"--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M"}

func launch(bin, dir string, port int, cred *syscall.Credential) (*Server, error) {
	args := append([]string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"),
		"--socket=" + filepath.Join(dir, "s.sock"), "--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
		"--log-error=" + filepath.Join(dir, "error.log"), "--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin", "--max-connections=200"}, sizing...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// Its own process group (a Ctrl-C on the terminal is the harness's to
	// handle), killed by the kernel when the process that started it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	s := &Server{cmd: cmd, dir: dir, port: port, exited: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	return s, nil
}

// readyPoll is the pause between connection attempts while the server
// starts; readiness is decided by a real connection, never by this pause.
const readyPoll = 20 * time.Millisecond

func (s *Server) waitReady(ctx context.Context) error {
	db, err := sql.Open("mysql", s.DriverDSN(""))
	if err != nil {
		return err
	}
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = db.PingContext(attempt)
		cancel()
		if err == nil {
			s.db = db
			return nil
		}
		t := time.NewTimer(readyPoll)
		select {
		case <-s.exited:
			t.Stop()
			_ = db.Close()
			return fmt.Errorf("%w (%v): %s", ErrExited, s.waitErr, s.logTail())
		case <-ctx.Done():
			t.Stop()
			_ = db.Close()
			return fmt.Errorf("wait for mariadbd on port %d: %w (last error: %v): %s", s.port, ctx.Err(), err, s.logTail())
		case <-t.C:
		}
	}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// PID is mariadbd's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// DSN is database db's address in idemchaos's form, the one the sql
// oracle reads: mysql://root@127.0.0.1:PORT/db.
func (s *Server) DSN(db string) string { return fmt.Sprintf("mysql://root@%s/%s", s.Addr(), db) }

// DriverDSN is database db's address in go-sql-driver/mysql's form:
// root@tcp(127.0.0.1:PORT)/db.
func (s *Server) DriverDSN(db string) string {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = "root", "tcp", s.Addr(), db
	return c.FormatDSN()
}

// ident is what a database name may hold here: it is spliced into SQL.
var ident = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// CreateDatabase creates an empty database and returns its [Server.DSN].
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	if !ident.MatchString(name) {
		return "", fmt.Errorf("database name %q: want 1 to 64 letters, digits or _", name)
	}
	db, err := s.pool()
	if err != nil {
		return "", err
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.DSN(name), nil
}

// DropDatabase drops a database made by [Server.CreateDatabase].
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	if !ident.MatchString(name) {
		return fmt.Errorf("database name %q: want 1 to 64 letters, digits or _", name)
	}
	db, err := s.pool()
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func (s *Server) pool() (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.db, nil
}

// stopGrace is how long a clean shutdown may take before the process group
// is SIGKILLed.
const stopGrace = 10 * time.Second

// Close stops the server (SIGTERM, then SIGKILL after a grace or when ctx
// ends) and waits for it to exit. It is idempotent.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.exited
		return nil
	}
	s.closed = true
	db := s.db
	s.mu.Unlock()
	if s.unregister != nil {
		s.unregister()
	}
	if db != nil {
		_ = db.Close()
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-s.exited:
		return nil
	case <-grace.C:
	case <-ctx.Done():
	}
	s.kill()
	return ctx.Err()
}

func (s *Server) kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "error.log"))
	return tail(string(b))
}

// tail is the last lines of a log, enough to say why a server failed.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
