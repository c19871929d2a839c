package mariadbtest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/internal/mariadb"
)

var shared struct {
	mu     sync.Mutex
	server *mariadb.Server
	err    error
}

var dbSeq atomic.Int64

// Main runs the tests, then stops the shared server and removes the run
// directory, and exits with the tests' status: it is [pgtest.Main], since
// both servers live in the process's run directory and close with it (a
// package that uses both calls either).
func Main(m *testing.M) { pgtest.Main(m) }

// Server returns the test binary's shared server, starting it on first
// use. Tests must not close it.
func Server(tb testing.TB) *mariadb.Server {
	tb.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.server == nil && shared.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared.server, shared.err = mariadb.Start(ctx, mariadb.Config{})
	}
	if shared.err != nil {
		tb.Fatalf("mariadbtest: start shared MariaDB: %v", shared.err)
	}
	return shared.server
}

// DB is one test's database, in the two forms a test needs.
type DB struct {
	// URL is idemchaos's form, for a scenario's effects.dsn:
	// mysql://root@127.0.0.1:PORT/NAME.
	URL string
	// DSN is go-sql-driver/mysql's form, for sql.Open("mysql", …):
	// root@tcp(127.0.0.1:PORT)/NAME.
	DSN string
	// Name is the database's name.
	Name string
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// Database creates a fresh empty database on the shared server, named
// after the test, and drops it at the test's cleanup.
func Database(tb testing.TB) DB {
	tb.Helper()
	s := Server(tb)
	name := nonIdent.ReplaceAllString(strings.ToLower(tb.Name()), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("t%d_%s", dbSeq.Add(1), name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, err := s.CreateDatabase(ctx, name)
	if err != nil {
		tb.Fatalf("mariadbtest: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.DropDatabase(ctx, name); err != nil && err != mariadb.ErrClosed {
			tb.Errorf("mariadbtest: %v", err)
		}
	})
	return DB{URL: url, DSN: s.DriverDSN(name), Name: name}
}
