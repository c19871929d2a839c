package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/oracle"
	_ "github.com/idemchaos/idemchaos/harness/oracle/sqlite"
)

// writer is Python's sqlite3 (C SQLite) in another process: it makes the
// file in WAL mode as a service would, commits three orders, then holds a
// fourth in an open transaction until told to commit, answering each step
// on stdout.
const writer = `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, idem TEXT)")
db.executemany("INSERT INTO orders (customer, idem) VALUES (?, ?)", [("c1", "k1"), ("c1", "k2"), ("c2", "k1")])
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO orders (customer, idem) VALUES ('c2', 'k7')")
print("open", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
print("committed", flush=True)
sys.stdin.readline()
`

func read(t *testing.T, dsn string) string {
	t.Helper()
	fx, err := oracle.SQL(dsn, "SELECT customer, idem, 'order ' || id FROM orders").Effects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range fx {
		out = append(out, fmt.Sprintf("%s/%s/%s", e.Tenant, e.Key, e.ID))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestSQL_ReadsAFileAnotherProcessWrites reads a SQLite file while its
// writer, another process with C SQLite, holds a write transaction open:
// the oracle sees what was committed, waits for nothing, writes nothing,
// and sees the rest once it is committed.
func TestSQL_ReadsAFileAnotherProcessWrites(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "orders.sqlite")
	cmd := exec.Command("python3", "-c", writer, file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("python3 (test.sh installs it): %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	step := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("writer said %q (%v), want %q", lines.Text(), lines.Err(), want)
		}
	}
	step("open")
	before, _ := os.Stat(file)
	if got, want := read(t, "sqlite:"+file), "c1/k1/order 1 c1/k2/order 2 c2/k1/order 3"; got != want {
		t.Fatalf("during the writer's transaction: %s, want %s", got, want)
	}
	_, _ = io.WriteString(stdin, "commit\n")
	step("committed")
	if got, want := read(t, "sqlite:"+file), "c1/k1/order 1 c1/k2/order 2 c2/k1/order 3 c2/k7/order 4"; got != want {
		t.Fatalf("after the commit: %s, want %s", got, want)
	}
	if after, _ := os.Stat(file); after.ModTime() != before.ModTime() || after.Size() != before.Size() {
		t.Errorf("the read-only oracle changed the database file")
	}
}

func TestSQL_RefusesWhatIsNotADatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.sqlite")
	for dsn, want := range map[string]string{
		"sqlite:" + missing:  "no such file",
		"sqlite:" + dir:      "is a directory",
		"sqlite:":            "want sqlite:PATH",
		"sqlite://host/x.db": "not a URL with a host",
	} {
		_, err := oracle.SQL(dsn, "SELECT 1, 2, 3").Effects(context.Background())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", dsn, err, want)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("reading a missing database created it")
	}
}

// An empty table reads as zero effects, and the reading says which query
// found no row.
func TestSQL_ReadingOfAnEmptyTable(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "empty.sqlite")
	if out, err := exec.Command("python3", "-c", "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('CREATE TABLE orders (customer, idem, id)')", file).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	r, err := oracle.Read(context.Background(), oracle.SQL("sqlite:"+file, "SELECT customer, idem,\n  id FROM orders"))
	if err != nil || len(r.Effects) != 0 || r.Source != "query SELECT customer, idem, id FROM orders" || r.Got != "0 rows" {
		t.Fatalf("reading %+v, %v", r, err)
	}
}

// Python's datetime.isoformat() text, as a Python service stores it in
// SQLite, is when a state was written.
func TestSQL_ReadsPythonsIsoformatAsWrittenAt(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "payments.sqlite")
	script := `
import sqlite3, sys
from datetime import datetime, timezone
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE payments (id TEXT PRIMARY KEY, status TEXT, updated_at TEXT)")
db.execute("INSERT INTO payments VALUES ('pay_1', 'paid', ?)", (datetime(2026, 12, 2, 7, 0, 1, 250000, tzinfo=timezone.utc).isoformat(),))
db.commit()
`
	if out, err := exec.Command("python3", "-c", script, file).CombinedOutput(); err != nil {
		t.Fatalf("python3 (test.sh installs it): %v: %s", err, out)
	}
	fx, err := oracle.SQL("sqlite:"+file, "SELECT 'provider', id, 'payment ' || id, status AS state, updated_at AS written_at FROM payments").Effects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(fx) != 1 || fx[0].State != "paid" || !fx[0].WrittenAt.Equal(time.Date(2026, 12, 2, 7, 0, 1, 250000000, time.UTC)) {
		t.Fatalf("got %+v", fx)
	}
}
