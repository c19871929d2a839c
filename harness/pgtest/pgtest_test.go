package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/harness/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestDatabase_FreshAndUsable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.Database(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil {
		t.Fatalf("query: %v", err)
	}
	if n != 0 {
		t.Fatalf("fresh database has %d tables, want 0", n)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int primary key)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
}

func TestDatabase_DistinctPerTest(t *testing.T) {
	t.Parallel()
	a, b := pgtest.Database(t), pgtest.Database(t)
	if a == b {
		t.Fatalf("two calls returned the same DSN %q", a)
	}
}

func TestPrimary_Shared(t *testing.T) {
	t.Parallel()
	if pgtest.Primary(t) != pgtest.Primary(t) {
		t.Fatal("Primary returned two different clusters")
	}
}
