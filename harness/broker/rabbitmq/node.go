package rabbitmq

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/proc"
)

// Where Debian's rabbitmq-server package puts the node's start script and
// Erlang's port mapper. /usr/sbin/rabbitmq-server is a wrapper that
// switches to the rabbitmq user by itself (su, a process the harness does
// not own): the harness runs the script behind it, as that user.
var (
	serverScripts = []string{"/usr/lib/rabbitmq/bin/rabbitmq-server"}
	epmdPaths     = []string{"/usr/bin/epmd", "/usr/lib/erlang/bin/epmd"}
)

// readyWithin bounds a node's boot: a cold Erlang VM loads and compiles
// some thousand modules first, seconds on a loaded 2-core machine.
const readyWithin = 120 * time.Second

// node is one throwaway RabbitMQ node and the port mapper of its own: its
// name, cookie, directories and ports are the run's, so that runs overlap.
type node struct {
	name string // idemchaos-<hex>@localhost
	dir  string
	// scripts and plugins are its RABBITMQ_HOME's sbin and plugins
	// directories (runHome).
	scripts, plugins string
	amqp             string // host:port of its AMQP listener
	dist             int
	epmd             int
	user             serverUser

	epmdProc *proc.Process
	beam     *proc.Process
	notify   *net.UnixConn
	// readyMu guards ready, closed at the current incarnation's READY=1
	// (a restart makes a new one).
	readyMu sync.Mutex
	ready   chan struct{}
}

// isReady says whether the current incarnation said READY=1.
func (n *node) isReady() bool {
	n.readyMu.Lock()
	defer n.readyMu.Unlock()
	select {
	case <-n.ready:
		return true
	default:
		return false
	}
}

// restart stops the node's VM (SIGTERM: RabbitMQ stops cleanly, as a
// service restart or a rolling upgrade stops it; SIGKILL after the grace),
// reaps its helpers, and starts it again with the same name, ports and
// directories, returning once it says it is ready. Its epmd stays up
// throughout. Not SIGKILL: a single node's quorum queue did not come back
// from one within a minute here (the queue reported no messages and
// basic.consume failed with INTERNAL_ERROR), which would test RabbitMQ's
// recovery, not the consumer.
func (n *node) restart(ctx context.Context) error {
	if err := n.beam.Stop(ctx); err != nil {
		return fmt.Errorf("rabbitmq: restart: %w", err)
	}
	if err := n.reap(ctx, n.epmdProc.PID()); err != nil { // its epmd serves the next VM
		return fmt.Errorf("rabbitmq: restart: %w", err)
	}
	n.readyMu.Lock()
	n.ready = make(chan struct{})
	n.readyMu.Unlock()
	if err := n.beam.Restart(ctx); err != nil {
		return fmt.Errorf("rabbitmq: restart: %w", err)
	}
	return nil
}

// serverUser is who the node runs as: the current user, or Debian's
// "rabbitmq" user when the harness is root (the Erlang VM would run as
// root otherwise, which RabbitMQ's own packaging never does).
type serverUser struct {
	uid, gid int
	cred     *syscall.Credential
}

func lookupServerUser() (serverUser, error) {
	if os.Geteuid() != 0 {
		return serverUser{uid: -1, gid: -1}, nil
	}
	u, err := user.Lookup("rabbitmq")
	if err != nil {
		return serverUser{}, fmt.Errorf("%w: %w", ErrNoServerUser, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return serverUser{}, fmt.Errorf("rabbitmq: uid %q gid %q of the rabbitmq user", u.Uid, u.Gid)
	}
	return serverUser{uid: uid, gid: gid, cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}}, nil
}

func (u serverUser) chown(path string) error {
	if u.cred == nil {
		return nil
	}
	return os.Lchown(path, u.uid, u.gid)
}

// traversable fails with a clear error when the server user cannot reach
// dir (a Go test's t.TempDir, mode 0700 and root's, is the classic case).
func (u serverUser) traversable(dir string) error {
	if u.cred == nil {
		return nil
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("rabbitmq: %w", err)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		perm := st.Mode().Perm()
		if !(perm&0o001 != 0 || (ok && int(sys.Uid) == u.uid && perm&0o100 != 0) || (ok && int(sys.Gid) == u.gid && perm&0o010 != 0)) {
			return fmt.Errorf("%w: %s (mode %v); give the broker a directory under one the rabbitmq user can enter (chmod o+x)", ErrNotTraversable, d, perm)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func findExe(paths []string, name string) (string, error) {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s (looked in %s)", ErrNotInstalled, name, strings.Join(paths, ", "))
}

// freePort asks the gate for a loopback port no one listens on now.
func freePort(ctx context.Context, g *addrgate.Gate, host, what string) (int, error) {
	ln, err := g.Listen(ctx, net.JoinHostPort(host, "0"), setting+" "+what)
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// nodeSpec is what a node is started with.
type nodeSpec struct {
	dir            string
	host           string // the AMQP listener's address (the gate's)
	port           int    // 0: a free one
	consumerTimout time.Duration
}

// startNode starts epmd and the node and waits for the node's READY=1.
func startNode(ctx context.Context, g *addrgate.Gate, spec nodeSpec) (_ *node, err error) {
	script, err := findExe(serverScripts, "rabbitmq-server")
	if err != nil {
		return nil, err
	}
	epmd, err := findExe(epmdPaths, "epmd")
	if err != nil {
		return nil, err
	}
	u, err := lookupServerUser()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.dir, 0o700); err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	if err := u.chown(spec.dir); err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	if err := u.traversable(spec.dir); err != nil {
		return nil, err
	}
	// n, not a named result: a failed start returns nil, and the deferred
	// stop below must still see the node it stops.
	n := &node{dir: spec.dir, user: u, ready: make(chan struct{})}
	id := make([]byte, 6)
	cookie := make([]byte, 16)
	_, _ = rand.Read(id)
	_, _ = rand.Read(cookie)
	n.name = "idemchaos-" + hex.EncodeToString(id) + "@localhost"
	port := spec.port
	if port == 0 {
		if port, err = freePort(ctx, g, spec.host, "AMQP listener"); err != nil {
			return nil, err
		}
	}
	n.amqp = net.JoinHostPort(spec.host, strconv.Itoa(port))
	// epmd and the distribution listen on loopback whatever the AMQP
	// listener's address: nothing but this node talks to them.
	if n.dist, err = freePort(ctx, g, "127.0.0.1", "Erlang distribution"); err != nil {
		return nil, err
	}
	if n.epmd, err = freePort(ctx, g, "127.0.0.1", "epmd"); err != nil {
		return nil, err
	}
	if n.scripts, n.plugins, err = runHome(n.dir, script); err != nil {
		return nil, err
	}
	if err := n.writeFiles(hex.EncodeToString(cookie), spec); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = n.stop(context.WithoutCancel(ctx))
		}
	}()
	env := n.env()
	// epmd runs in the foreground as the harness's child, so that it dies
	// with the node (a node starts one with -daemon otherwise, outside
	// every process group the harness could reap). -d prints the line
	// that says it listens.
	n.epmdProc, err = proc.Start(ctx, proc.Spec{
		Path: epmd, Args: []string{"-d", "-port", strconv.Itoa(n.epmd), "-address", "127.0.0.1"},
		Env: env, Dir: n.dir, LogPath: filepath.Join(n.dir, "epmd.log"), Credential: u.cred,
		Ready: proc.LineReady("epmd running"), ReadyTimeout: 30 * time.Second, StopGrace: 2 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: epmd: %w", err)
	}
	if err := n.listenNotify(); err != nil {
		return nil, err
	}
	n.beam, err = proc.Start(ctx, proc.Spec{
		Path: script, Env: env, Dir: n.dir, LogPath: filepath.Join(n.dir, "node.log"), Credential: u.cred,
		Ready: proc.FuncReady(func(context.Context) error {
			if n.isReady() {
				return nil
			}
			return errNotReady
		}),
		ReadyTimeout: readyWithin, StopGrace: 10 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: node %s: %w", n.name, err)
	}
	return n, nil
}

var errNotReady = errors.New("rabbitmq: node not ready")

// env is the node's environment, every path and port its own. Every
// process of the node inherits RABBITMQ_NODENAME, which is how [node.reap]
// finds the ones no process group holds.
func (n *node) env() []string {
	host, port, _ := net.SplitHostPort(n.amqp)
	p := func(name string) string { return filepath.Join(n.dir, name) }
	return []string{
		"HOME=" + p("home"), // the cookie: home/.erlang.cookie
		"RABBITMQ_NODENAME=" + n.name,
		"RABBITMQ_USE_LONGNAME=false",
		"RABBITMQ_NODE_IP_ADDRESS=" + host,
		"RABBITMQ_NODE_PORT=" + port,
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(n.dist),
		"ERL_EPMD_PORT=" + strconv.Itoa(n.epmd),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"RABBITMQ_CONF_ENV_FILE=" + p("rabbitmq-env.conf"), // not /etc/rabbitmq's
		// The classic (Erlang terms) configuration file: a .conf one is
		// Cuttlefish's, whose schemas of every application take 0.8 s to
		// find and apply. advanced.config goes only with a .conf file: it
		// names none, so that /etc/rabbitmq's is not read either.
		"RABBITMQ_CONFIG_FILE=" + p("rabbitmq.config"),
		"RABBITMQ_ADVANCED_CONFIG_FILE=" + p("advanced.config"),
		"RABBITMQ_SCRIPTS_DIR=" + n.scripts, // RABBITMQ_HOME: runHome's
		"RABBITMQ_PLUGINS_DIR=" + n.plugins,
		"ERL_AFLAGS=" + preloadEval,
		// Unbound schedulers (RabbitMQ binds them to cores by default,
		// +stbt db): on a shared machine a scheduler pinned beside a busy
		// process cannot move to the idle core. With two CPU-bound
		// processes on the 2-core machine here a start took 30 s bound,
		// 13–17 s unbound; alike otherwise (3.3–3.9 s against 3.6–4.8 s
		// at load 13–15).
		"RABBITMQ_SCHEDULER_BIND_TYPE=u",
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + p("enabled_plugins"),
		"RABBITMQ_MNESIA_BASE=" + p("mnesia"),
		"RABBITMQ_LOG_BASE=" + p("log"),
		"RABBITMQ_LOGS=-", // to the harness's log of the node
		"RABBITMQ_PLUGINS_EXPAND_DIR=" + p("plugins-expand"),
		"RABBITMQ_PID_FILE=" + p("node.pid"),
		"RABBITMQ_FEATURE_FLAGS_FILE=" + p("feature_flags"),
		"RABBITMQ_ALLOW_INPUT=",
		// Started as systemd starts it (Type=notify): the script then
		// execs the VM in its place, so the VM is the harness's child and
		// carries its parent-death signal, and the node says READY=1 on
		// the run's own socket once it booted.
		"NOTIFY_SOCKET=@" + n.notifyName(),
	}
}

func (n *node) notifyName() string {
	return "idemchaos-rabbitmq-" + strings.TrimSuffix(n.name, "@localhost")
}

// writeFiles writes the node's configuration, owned by the server user:
// no plugin (none listens anywhere), the distribution on loopback, the
// consumer timeout, guest only from loopback.
func (n *node) writeFiles(cookie string, spec nodeSpec) error {
	timeout := max(spec.consumerTimout, minConsumerTimeout)
	files := []struct {
		name, body string
		mode       os.FileMode
	}{
		{"rabbitmq-env.conf", "", 0o644},
		{"enabled_plugins", "[].\n", 0o644},
		{"rabbitmq.config", "[{rabbit, [{loopback_users, [<<\"guest\">>]}, {consumer_timeout, " + strconv.FormatInt(timeout.Milliseconds(), 10) + "}]},\n" +
			" {kernel, [{inet_dist_use_interface, {127,0,0,1}}]}].\n", 0o644},
		{"home/.erlang.cookie", cookie, 0o400},
	}
	for _, d := range []string{"home", "mnesia", "log", "plugins-expand"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o700); err != nil {
			return fmt.Errorf("rabbitmq: %w", err)
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(n.dir, f.name), []byte(f.body), f.mode); err != nil {
			return fmt.Errorf("rabbitmq: %w", err)
		}
	}
	return filepath.Walk(n.dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return n.user.chown(path)
	})
}

// listenNotify opens the node's notify socket (abstract: no file, no
// path length or permission to get right) and closes n.ready at READY=1.
func (n *node) listenNotify() error {
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "@" + n.notifyName(), Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("rabbitmq: notify socket: %w", err)
	}
	n.notify = c
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			for _, l := range bytes.Split(buf[:k], []byte("\n")) {
				if string(l) == "READY=1" {
					n.readyMu.Lock()
					select {
					case <-n.ready: // this incarnation said it before
					default:
						close(n.ready)
					}
					n.readyMu.Unlock()
				}
			}
		}
	}()
	return nil
}

// stop stops the node (SIGTERM to its process group: RabbitMQ stops
// cleanly; SIGKILL after a grace) and its epmd, then reaps what no process
// group held.
func (n *node) stop(ctx context.Context) error {
	var errs []error
	if n.beam != nil {
		errs = append(errs, n.beam.Stop(ctx))
	}
	if n.epmdProc != nil {
		errs = append(errs, n.epmdProc.Stop(ctx))
	}
	if n.notify != nil {
		_ = n.notify.Close()
	}
	errs = append(errs, n.reap(ctx))
	return errors.Join(errs...)
}

// kill SIGKILLs the node's VM, as a crash would (its epmd stays).
func (n *node) kill(ctx context.Context) error { return n.beam.Kill(ctx) }

// reap finds the node's processes outside its process groups: the VM
// puts its port helper (erl_child_setup) in a session of its own, and
// that one's children (inet_gethost, the shell of os:cmd) follow it. They
// leave by themselves once the VM is gone; reap waits for that, kills
// what stays, and fails if something survives even that. The pids in keep
// are left alone (epmd, through a restart).
func (n *node) reap(ctx context.Context, keep ...int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := slices.DeleteFunc(processes(n.name), func(pid int) bool { return slices.Contains(keep, pid) })
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if left = waitGone(left, 5*time.Second); len(left) > 0 {
				return fmt.Errorf("rabbitmq: processes %v of node %s survived SIGKILL", left, n.name)
			}
			return nil
		}
		time.Sleep(20 * time.Millisecond) // no signal: they are not our children
	}
}

func waitGone(pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive says whether pid runs (a zombie, dead and not yet reaped by its
// parent, does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// processes lists the live processes of the node named node: every one
// whose environment says RABBITMQ_NODENAME=node, which each process of
// the node inherits (its epmd, its VM and all the VM starts). Reading another user's environment needs root or that user.
func processes(node string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte("\x00RABBITMQ_NODENAME=" + node + "\x00")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append(append([]byte{0}, env...), 0), want) {
			continue
		}
		if alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
