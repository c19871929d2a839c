package pgcluster

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/idemchaos/idemchaos/internal/runenv"
)

// tuning is appended to the template's postgresql.conf. Durability is
// traded for speed (the data is thrown away), shared memory is small, and
// dynamic shared memory uses mmap'd files inside the data directory so that
// a SIGKILLed server leaks no POSIX/System V segments beyond the tiny
// interlock one the reaper removes.
const tuning = `
# idemchaos test tuning
listen_addresses = '127.0.0.1'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 32MB
dynamic_shared_memory_type = mmap
max_connections = 200
wal_level = replica
max_wal_senders = 10
hot_standby = on
wal_writer_delay = 10ms
jit = off
huge_pages = off
logging_collector = off
log_min_messages = warning
log_line_prefix = '%m [%p] '
`

// walKeep keeps WAL a standby may still need: one made by pg_basebackup
// streams from where its backup ended, without a slot, and WAL-heavy work
// beside it (CREATE DATABASE in parallel tests) could recycle that segment
// first ("requested WAL segment … has already been removed"). The setting
// is wal_keep_size from Postgres 13 on, wal_keep_segments before.
func walKeep(dataDir string) string {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err != nil {
		return ""
	}
	if major, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && major < 13 {
		return "wal_keep_segments = 8\n"
	}
	return "wal_keep_size = 128MB\n"
}

// templateKey identifies one template: one per run and binary directory.
type templateKey struct {
	run    *runenv.Run
	binDir string
}

var templates struct {
	mu   sync.Mutex
	dirs map[templateKey]string
}

// templateDataDir returns the run's template data directory for binDir,
// running initdb the first time. Concurrent callers wait for one initdb.
func templateDataDir(ctx context.Context, run *runenv.Run, binDir string, u serverUser) (string, error) {
	templates.mu.Lock()
	defer templates.mu.Unlock()
	key := templateKey{run, binDir}
	if dir, ok := templates.dirs[key]; ok {
		if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
			return dir, nil
		}
	}
	parent, err := run.NewDir("t", u.uid, u.gid)
	if err != nil {
		return "", fmt.Errorf("template directory: %w", err)
	}
	dataDir := filepath.Join(parent, "data")
	logPath := filepath.Join(parent, "initdb.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", fmt.Errorf("initdb log: %w", err)
	}
	defer logf.Close()
	cmd := u.command(ctx, filepath.Join(binDir, "initdb"),
		"-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C",
		"--no-sync", "--no-instructions")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = parent
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("initdb: %w: %s", err, logTail(logPath))
	}
	conf, err := os.OpenFile(filepath.Join(dataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return "", fmt.Errorf("open template postgresql.conf: %w", err)
	}
	_, werr := io.WriteString(conf, tuning+walKeep(dataDir))
	if cerr := conf.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("tune template: %w", werr)
	}
	if templates.dirs == nil {
		templates.dirs = map[templateKey]string{}
	}
	templates.dirs[key] = dataDir
	run.OnClose(func(context.Context) error {
		templates.mu.Lock()
		defer templates.mu.Unlock()
		delete(templates.dirs, key)
		return nil
	})
	return dataDir, nil
}

// copyTree copies the data directory src to dst (which must not exist),
// preserving modes and giving everything to the server user.
func copyTree(src, dst string, u serverUser) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(path, target, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		default:
			return nil // sockets and the like are not part of a data directory
		}
		return u.chown(target)
	})
}

// copyFile copies one regular file.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// logTail returns the last few hundred bytes of a log file, for error
// messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	const max = 800
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
