package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The address gate, proved from outside: in a network namespace that has
// only loopback, every path by which the harness could reach another
// machine is run with a non-loopback target, DSN, Toxiproxy, redirect or
// listen address, under strace counting connect() and bind(). Not one of
// those calls may be to or on an address off the machine (a DNS query
// included: the name itself would leave), and each run stops with one line,
// exit 3. One run with a loopback target given as "localhost." (a trailing
// dot: the hosts file, not DNS) sends real traffic and is held to the same
// count.
//
// The test binary re-executes itself inside `unshare -n` (see
// [maybeNetnsChild]), brings lo up, serves the loopback peers the runs
// need (a service, a redirector, a stand-in database) and runs the real
// CLI under strace; the docker path, whose daemon lives outside any
// namespace, is held by addrgate's test of the addresses docker publishes.
func TestNetns_NoConnectOffTheMachine(t *testing.T) {
	for _, tool := range []string{"unshare", "ip", "strace"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: ./test.sh installs it (apt-get install strace iproute2 util-linux)", tool)
		}
	}
	bin := buildCLI(t)
	args := []string{"-n"}
	if os.Getuid() != 0 {
		args = []string{"-r", "-n"} // a user namespace makes the network one without root
	}
	args = append(args, os.Args[0], "-test.run=^$")
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), netnsEnv+"="+bin, "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("in the namespace: %v", err)
	}
	if !regexp.MustCompile(`(?m)^netns: 1\d paths, \d+ connect/bind calls, 0 off the machine$`).Match(out) {
		t.Fatal("the namespace run did not report its count")
	}
}

// netnsEnv carries the CLI's path into the re-executed test binary.
const netnsEnv = "IDEMCHAOS_NETNS_CLI"

// maybeNetnsChild is TestMain's first call: inside the namespace the test
// binary runs the paths and exits with their verdict.
func maybeNetnsChild() {
	bin := os.Getenv(netnsEnv)
	if bin == "" {
		return
	}
	if err := netnsChild(bin); err != nil {
		fmt.Println("FAIL:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// netnsPath is one way the harness could reach another machine.
type netnsPath struct {
	name string
	args []string
	env  []string
	// code is the exit code wanted; -1 wants a run that judged (0, 1 or 2)
	// after sending traffic to loopback: to the service at port reaches
	// (its reachability check, then the fault proxy's forwarding).
	code    int
	reaches string
	// says is in the one line of a refusal.
	says string
}

func netnsChild(bin string) error {
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %v: %s", err, out)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
			return fmt.Errorf("interface %s is up: not a loopback-only namespace", i.Name)
		}
	}
	dir, err := os.MkdirTemp("", "netns")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	svc, err := serveLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":"o-%s"}`, r.Header.Get("Idempotency-Key"))
			return
		}
		fmt.Fprint(w, `{}`)
	}))
	if err != nil {
		return err
	}
	_, svcPort, _ := net.SplitHostPort(svc)
	redirector, err := serveLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://203.0.113.7/effects", http.StatusFound)
	}))
	if err != nil {
		return err
	}
	db, err := net.Listen("tcp", "127.0.0.1:0") // a database stand-in: it accepts
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := db.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	write := func(name, effects string, extra string) (string, error) {
		p := filepath.Join(dir, name)
		body := "name: " + strings.TrimSuffix(name, ".yaml") + "\ntarget:\n  url: http://" + svc + "\n" + extra +
			"traffic: {intents: 4, concurrency: 2}\ninvariants: [replay-identical]\neffects:\n" + effects
		return p, os.WriteFile(p, []byte(body), 0o644)
	}
	files := map[string]string{}
	for name, c := range map[string][2]string{
		"base.yaml":       {"  oracle: none\n", ""},
		"declared.yaml":   {"  oracle: none\n", "  allow_remote: true\n"},
		"dsn-url.yaml":    {netnsSQL("postgres://u@203.0.113.7:5432/db"), ""},
		"dsn-hosts.yaml":  {netnsSQL("postgresql://u@127.0.0.1:1,203.0.113.7:5432/db"), ""},
		"dsn-kv.yaml":     {netnsSQL("host=203.0.113.7 dbname=db"), ""},
		"dsn-kv-dns.yaml": {netnsSQL("host=127.0.0.1,db.example.com port=1,5432 dbname=db"), ""},
		"redirect.yaml":   {"  oracle: http\n  url: http://" + redirector + "/effects\n  items: $[*]\n  tenant: $.t\n  key: $.k\n  id: $.id\n", ""},
	} {
		p, err := write(name, c[0], c[1])
		if err != nil {
			return err
		}
		files[name] = p
	}
	// A client run: the per-intent proxy's listeners and its forwarding to
	// the target (curl is the client).
	files["client.yaml"] = filepath.Join(dir, "client.yaml")
	if err := os.WriteFile(files["client.yaml"], []byte("name: client\ntarget:\n  url: http://"+svc+"\nclient:\n  command: [sh, -c, "+
		"'curl -s -X POST -H \"Idempotency-Key: k-$IDEMCHAOS_INTENT\" --data-binary @- \"$IDEMCHAOS_URL$IDEMCHAOS_PATH\"']\n"+
		"  intents: 2\ninvariants: [key-stable]\neffects:\n  oracle: none\n"), 0o644); err != nil {
		return err
	}
	history := filepath.Join(dir, "h.jsonl")
	clean, err := os.ReadFile("../../testdata/examples/response-drop-clean.jsonl")
	if err != nil {
		return err
	}
	if err := os.WriteFile(history, clean, 0o644); err != nil {
		return err
	}
	run := func(file string, more ...string) []string {
		return append([]string{"run", "-s", files[file], "--reruns", "0", "--shrink=false"}, more...)
	}
	paths := []netnsPath{
		{name: "target", args: run("base.yaml", "--target", "http://203.0.113.7:8080"), code: 3, says: "--target 203.0.113.7:8080 is not a loopback address"},
		{name: "target by DNS", args: run("base.yaml", "--target", "http://api.example.com:8080"), code: 3, says: `"api.example.com" is not in /etc/hosts`},
		{name: "effects.dsn URL", args: run("dsn-url.yaml"), code: 3, says: "dsn-url.yaml:8:8: effects.dsn 203.0.113.7:5432 is not a loopback address"},
		{name: "effects.dsn hosts", args: run("dsn-hosts.yaml"), code: 3, says: "effects.dsn 203.0.113.7:5432 is not a loopback address"},
		{name: "effects.dsn key=value", args: run("dsn-kv.yaml"), code: 3, says: "effects.dsn 203.0.113.7:5432 is not a loopback address"},
		{name: "effects.dsn hosts by DNS", args: run("dsn-kv-dns.yaml"), code: 3, says: `effects.dsn db.example.com:5432: "db.example.com" is not in`},
		{name: "check --effects", args: []string{"check", "--effects", files["dsn-hosts.yaml"], history}, code: 3, says: "effects.dsn 203.0.113.7:5432 is not a loopback address"},
		{name: "check --effects by DNS", args: []string{"check", "--effects", files["dsn-kv-dns.yaml"], history}, code: 3, says: `"db.example.com" is not in`},
		{name: "redirect", args: run("redirect.yaml"), code: 3, says: "effects.url (redirected to http://203.0.113.7/effects) 203.0.113.7:80 is not a loopback address"},
		{name: "--toxiproxy", args: run("base.yaml", "--toxiproxy", "http://203.0.113.7:8474"), code: 3, says: "--toxiproxy 203.0.113.7:8474 is not a loopback address"},
		{name: "IDEMCHAOS_TOXIPROXY", args: run("base.yaml"), env: []string{"IDEMCHAOS_TOXIPROXY=http://toxiproxy.example.com:8474"}, code: 3, says: `--toxiproxy toxiproxy.example.com:8474: "toxiproxy.example.com" is not in`},
		{name: "--db-addr", args: run("base.yaml", "--db-addr", "203.0.113.7:5432"), code: 3, says: "--db-addr 203.0.113.7:5432 is not a loopback address"},
		{name: "--db-listen 0.0.0.0", args: run("base.yaml", "--db-addr", db.Addr().String(), "--db-listen", "0.0.0.0:6432"), code: 3, says: "--db-listen 0.0.0.0:6432 listens on every interface"},
		{name: "--db-listen :port", args: run("base.yaml", "--db-addr", db.Addr().String(), "--db-listen", ":6432"), code: 3, says: "--db-listen :6432 listens on every interface"},
		{name: "target.allow_remote", args: run("declared.yaml"), code: 3, says: "declared.yaml:4:3: target.allow_remote: declared declares a target off this machine"},
		{name: "record --upstream", args: []string{"record", "--upstream", "http://203.0.113.7:8080", "--listen", "127.0.0.1:0", "--history", filepath.Join(dir, "r1.jsonl")}, code: 3, says: "--upstream 203.0.113.7:8080 is not a loopback address"},
		{name: "record --listen", args: []string{"record", "--upstream", "http://" + svc, "--listen", "0.0.0.0:0", "--history", filepath.Join(dir, "r2.jsonl")}, code: 3, says: "--listen 0.0.0.0:0 listens on every interface"},
		{name: "a loopback run by name", args: run("base.yaml", "--target", "http://localhost.:"+svcPort), code: -1, reaches: svcPort},
		{name: "a client run by name", args: run("client.yaml", "--target", "http://localhost.:"+svcPort), code: -1, reaches: svcPort},
	}
	calls := 0
	for _, p := range paths {
		n, err := runTraced(bin, dir, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		fmt.Printf("ok  %-26s %d connect/bind calls, all on loopback\n", p.name, n)
		calls += n
	}
	fmt.Printf("netns: %d paths, %d connect/bind calls, 0 off the machine\n", len(paths), calls)
	return nil
}

func netnsSQL(dsn string) string {
	return "  oracle: sql\n  dsn: \"" + dsn + "\"\n  query: SELECT 1, 2, 3\n"
}

// serveLoopback serves h on a loopback port and returns its address.
func serveLoopback(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(ln, h)
	return ln.Addr().String(), nil
}

// runTraced runs the CLI under strace and checks its exit, its one line
// and its connect()/bind() calls; it returns how many calls it made.
func runTraced(bin, dir string, p netnsPath) (int, error) {
	trace := filepath.Join(dir, "trace.txt")
	cmd := exec.Command("strace", append([]string{"-f", "-qq", "-e", "trace=connect,bind", "-o", trace, bin}, p.args...)...)
	cmd.Env = append(os.Environ(), p.env...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		return 0, err
	}
	f, err := os.Open(trace)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	calls, off, connects, err := socketCalls(f)
	if err != nil {
		return 0, err
	}
	if len(off) > 0 {
		return 0, fmt.Errorf("%d calls off the machine:\n%s", len(off), strings.Join(off, "\n"))
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	switch {
	case p.code >= 0 && code != p.code:
		return 0, fmt.Errorf("exit %d, want %d:\n%s", code, p.code, stderr.String())
	case p.code >= 0 && (len(lines) != 1 || !strings.Contains(lines[0], p.says)):
		return 0, fmt.Errorf("want one line saying %q, got:\n%s", p.says, stderr.String())
	case p.code < 0 && code > 2:
		return 0, fmt.Errorf("exit %d, want a judged run:\n%s", code, stderr.String())
	case p.code < 0 && connects[p.reaches] < 2:
		return 0, fmt.Errorf("%d connects to the service's port %s: the run sent no traffic (exit %d):\n%s", connects[p.reaches], p.reaches, code, stderr.String())
	}
	return calls, nil
}

var (
	sockCall = regexp.MustCompile(`\b(connect|bind)\(\d+, \{sa_family=(\w+)(.*?)\}`)
	inet4    = regexp.MustCompile(`sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)`)
	inet6    = regexp.MustCompile(`sin6_port=htons\((\d+)\).*inet_pton\(AF_INET6, "([^"]+)"`)
)

// socketCalls reads strace's output: how many connect()/bind() calls on
// IP sockets were made, those to or on an address off the machine (or to
// port 53: a DNS question asked, wherever the server is), and how many
// connects went to each port.
func socketCalls(r io.Reader) (n int, off []string, connects map[string]int, err error) {
	connects = map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := sockCall.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var port, addr string
		switch m[2] {
		case "AF_INET":
			a := inet4.FindStringSubmatch(m[3])
			if a == nil {
				return n, off, connects, fmt.Errorf("unparsed: %s", sc.Text())
			}
			port, addr = a[1], a[2]
		case "AF_INET6":
			a := inet6.FindStringSubmatch(m[3])
			if a == nil {
				return n, off, connects, fmt.Errorf("unparsed: %s", sc.Text())
			}
			port, addr = a[1], a[2]
		default:
			continue // AF_UNIX, AF_NETLINK: not an address of the network
		}
		n++
		ip, err := netip.ParseAddr(addr)
		if err != nil {
			return n, off, connects, fmt.Errorf("unparsed address %q: %s", addr, sc.Text())
		}
		if !ip.Unmap().IsLoopback() || (m[1] == "connect" && port == strconv.Itoa(53)) {
			off = append(off, sc.Text())
		}
		if m[1] == "connect" {
			connects[port]++
		}
	}
	return n, off, connects, sc.Err()
}
