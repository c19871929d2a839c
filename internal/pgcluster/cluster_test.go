package pgcluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/internal/pgcluster"
	"github.com/idemchaos/idemchaos/internal/runenv"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// connect opens a connection that is closed at cleanup.
func connect(tb testing.TB, dsn string) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connect %s: %v", dsn, err)
	}
	tb.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func TestFindBinDir_FindsServerBinaries(t *testing.T) {
	t.Parallel()
	dir, err := pgcluster.FindBinDir(context.Background())
	if err != nil {
		t.Fatalf("FindBinDir: %v", err)
	}
	if _, err := os.Stat(dir + "/postgres"); err != nil {
		t.Fatalf("no postgres in %s: %v", dir, err)
	}
}

func TestCluster_CreateDatabaseIsEmptyAndDroppable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.Primary(t)
	dsn, err := c.CreateDatabase(ctx, "Odd Name-"+t.Name())
	if err != nil {
		t.Fatalf("CreateDatabase: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to new database: %v", err)
	}
	var db, keep string
	if err := conn.QueryRow(ctx, "SELECT current_database(), current_setting('wal_keep_size')").Scan(&db, &keep); err != nil {
		t.Fatalf("query: %v", err)
	}
	_ = conn.Close(ctx)
	if keep != "128MB" { // a standby's base backup needs the WAL after it (template.go's walKeep)
		t.Errorf("wal_keep_size %s, want 128MB", keep)
	}
	if db != "Odd Name-"+t.Name() {
		t.Fatalf("connected to %q", db)
	}
	if err := c.DropDatabase(ctx, db); err != nil {
		t.Fatalf("DropDatabase: %v", err)
	}
}

func TestCluster_CloseStopsServerAndRemovesDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Config{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	dataDir := c.DataDir()
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("data directory still there: %v", err)
	}
	if _, err := pgx.Connect(ctx, c.DSN()); err == nil {
		t.Fatal("server still accepts connections after Close")
	}
	if _, err := c.CreateDatabase(ctx, "x"); !errors.Is(err, pgcluster.ErrClosed) {
		t.Fatalf("CreateDatabase after Close: %v, want ErrClosed", err)
	}
}

func TestStart_RefusesTooLongSocketPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	run, err := runenv.Open(ctx, runenv.Options{Base: base, NoReap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close(ctx)
	if _, err := pgcluster.Start(ctx, pgcluster.Config{Run: run}); !errors.Is(err, pgcluster.ErrSocketPathTooLong) {
		t.Fatalf("Start: %v, want ErrSocketPathTooLong", err)
	}
}

func TestStart_RefusesRunDirTheServerUserCannotReach(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root switches to the postgres user")
	}
	ctx := context.Background()
	run, err := runenv.Open(ctx, runenv.Options{Base: t.TempDir(), NoReap: true}) // t.TempDir is 0700
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close(ctx)
	if _, err := pgcluster.Start(ctx, pgcluster.Config{Run: run}); !errors.Is(err, pgcluster.ErrNotTraversable) {
		t.Fatalf("Start: %v, want ErrNotTraversable", err)
	}
}

func TestStandby_ApplyDelayHoldsRowsBackThenReleases(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const delay = 2 * time.Second
	c := pgtest.Primary(t)
	db := "t_apply_delay"
	dsn, err := c.CreateDatabase(ctx, db)
	if err != nil {
		t.Fatalf("CreateDatabase: %v", err)
	}
	t.Cleanup(func() { _ = c.DropDatabase(context.Background(), db) })
	primary := connect(t, dsn)
	if _, err := primary.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	// The base backup carries the table; the delay applies to what follows.
	sb, err := c.StartStandby(ctx, delay)
	if err != nil {
		t.Fatalf("StartStandby: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	standby := connect(t, sb.DSNFor(db))

	// Row 1: received at once, applied only after the delay.
	start := time.Now()
	lsn := insert(ctx, t, primary, 1)
	received := false
	for !received {
		var present bool
		err := standby.QueryRow(ctx, `SELECT pg_last_wal_receive_lsn() >= $1::pg_lsn, EXISTS (SELECT 1 FROM t WHERE id = 1)`, lsn).
			Scan(&received, &present)
		if err != nil {
			t.Fatalf("standby query: %v", err)
		}
		if present {
			t.Fatalf("row visible on standby %v after insert, before the %v delay", time.Since(start), delay)
		}
		if time.Since(start) > delay {
			t.Fatalf("standby did not receive LSN %s within %v", lsn, delay)
		}
	}
	waitVisible(ctx, t, standby, 1, 30*time.Second)
	if got := time.Since(start); got < delay {
		t.Fatalf("row visible after %v, before the %v delay", got, delay)
	}

	// Turn the lag off at run time: row 2 shows up well within the delay.
	if err := sb.SetApplyDelay(ctx, 0); err != nil {
		t.Fatalf("SetApplyDelay: %v", err)
	}
	start = time.Now()
	insert(ctx, t, primary, 2)
	waitVisible(ctx, t, standby, 2, 30*time.Second)
	if got := time.Since(start); got >= delay {
		t.Fatalf("with the delay off, row took %v to appear", got)
	}
}

// insert writes one row on the primary and returns the WAL insert position
// after its commit.
func insert(ctx context.Context, tb testing.TB, conn *pgx.Conn, id int) string {
	tb.Helper()
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES ($1)", id); err != nil {
		tb.Fatalf("insert: %v", err)
	}
	var lsn string
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		tb.Fatalf("insert lsn: %v", err)
	}
	return lsn
}

// waitVisible polls the standby until row id is visible or the deadline
// passes.
func waitVisible(ctx context.Context, tb testing.TB, conn *pgx.Conn, id int, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(5 * time.Millisecond) // a poll interval, not a synchronisation
	defer tick.Stop()
	for {
		var present bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM t WHERE id = $1)", id).Scan(&present); err != nil {
			tb.Fatalf("standby query: %v", err)
		}
		if present {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("row %d not visible on the standby within %v", id, within)
		}
		<-tick.C
	}
}

// A database made and filled on the primary is on the standby once CatchUp
// returns: what a service started with a replica DSN pings first.
//
// Not parallel: the shared standby's base backup must not race the other
// tests' CREATE DATABASEs, whose WAL can recycle the segment it streams
// (seen once: "requested WAL segment … has already been removed").
func TestStandby_CatchUpReplaysANewDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, sb := pgtest.Primary(t), pgtest.Standby(t)
	for i := range 3 {
		db := fmt.Sprintf("t_catch_up_%d", i)
		dsn, err := c.CreateDatabase(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.DropDatabase(context.Background(), db) })
		primary := connect(t, dsn)
		if _, err := primary.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (7)"); err != nil {
			t.Fatal(err)
		}
		if err := sb.CatchUp(ctx, c); err != nil {
			t.Fatal(err)
		}
		var id int
		if err := connect(t, sb.DSNFor(db)).QueryRow(ctx, "SELECT id FROM t").Scan(&id); err != nil || id != 7 {
			t.Fatalf("database %s on the standby after CatchUp: id %d, %v", db, id, err)
		}
	}
}
