package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/internal/netaddr"
	"github.com/idemchaos/idemchaos/internal/proc"
)

// ErrNoServer means no redis-server binary was found.
var ErrNoServer = errors.New("redis: redis-server not found on PATH nor in /usr/bin, /usr/sbin, /usr/local/bin (Debian: apt-get install redis-server)")

// findServer finds redis-server on PATH and where Debian installs it.
func findServer() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/bin", "/usr/sbin", "/usr/local/bin"} {
		p := filepath.Join(d, "redis-server")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", ErrNoServer
}

// readyLine is what redis-server logs once it accepts connections, after
// it has loaded its append-only file: on a restart, readiness means every
// acknowledged write is back.
const readyLine = "Ready to accept connections"

// maxPortAttempts bounds retries when another process takes the free port
// between the probe and the server's bind.
const maxPortAttempts = 5

// serverArgs is the throwaway server's whole configuration, on its
// command line (no config file is read: not /etc/redis's, nobody's).
// Every write is in the append-only file and fsynced before the server
// answers it (appendfsync always), so a SIGKILL loses nothing a client was
// told succeeded; no RDB snapshot is ever saved (save ""), and all the
// server writes stays in dir. Protected mode stays on: the server listens
// on loopback only anyway, and protected mode refuses any other client of
// a server without a password.
func serverArgs(host string, port int, dir string) []string {
	return []string{
		"--bind", host,
		"--port", strconv.Itoa(port),
		"--protected-mode", "yes",
		"--dir", dir,
		"--appendonly", "yes",
		"--appendfsync", "always",
		"--save", "",
		"--daemonize", "no",
		"--supervised", "no",
		"--logfile", "",
		"--always-show-logo", "no",
		"--databases", "1",
	}
}

// startServer starts redis-server on host: on port, or on a free port
// when port is 0 (retrying when another process took it first). Its
// output goes to redis-server.log in dir.
func startServer(ctx context.Context, host string, port int, dir string) (*proc.Process, string, error) {
	bin, err := findServer()
	if err != nil {
		return nil, "", err
	}
	var last error
	for range maxPortAttempts {
		p := port
		if p == 0 {
			if p, err = netaddr.FreePort(); err != nil {
				return nil, "", fmt.Errorf("redis: find a free port: %w", err)
			}
		}
		pr, err := proc.Start(ctx, proc.Spec{
			Path: bin, Args: serverArgs(host, p, dir), Dir: dir,
			LogPath: filepath.Join(dir, "redis-server.log"),
			Ready:   proc.LineReady(readyLine), ReadyTimeout: 30 * time.Second,
			StopGrace: 5 * time.Second,
		})
		if err == nil {
			return pr, net.JoinHostPort(host, strconv.Itoa(p)), nil
		}
		last = fmt.Errorf("redis: %w", err)
		if port != 0 || !errors.Is(err, proc.ErrExited) || !strings.Contains(err.Error(), "in use") {
			return nil, "", last
		}
	}
	return nil, "", last
}
