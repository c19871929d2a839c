package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/internal/pgcluster"
)

// Machine is what the figures were measured on.
type Machine struct {
	CPU       string
	Cores     int
	MemoryGiB float64
	Kernel    string
	Go        string
	Postgres  string
	Wrk       string
	Pgbench   string
	Date      time.Time
	// Load1Start and Load1End are the 1-minute load averages when the run
	// began and ended: the machine may be shared.
	Load1Start, Load1End float64
}

func machineInfo(ctx context.Context, opts Options) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Date: time.Now().UTC(), Load1Start: load1()}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseFloat(strings.Fields(procField("/proc/meminfo", "MemTotal") + " 0")[0], 64); err == nil {
		m.MemoryGiB = kb / (1 << 20)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	} else {
		m.Kernel = runtime.GOOS
	}
	if dir, err := pgcluster.FindBinDir(ctx); err == nil {
		m.Postgres = firstLine(ctx, filepath.Join(dir, "postgres"), "--version")
	}
	m.Wrk, _, _ = strings.Cut(firstLine(ctx, binary(opts.Wrk, "wrk"), "--version"), " Copyright")
	m.Pgbench = firstLine(ctx, binary(opts.Pgbench, "pgbench"), "--version")
	return m
}

// binary is path, or name looked up in PATH ("" when absent).
func binary(path, name string) string {
	if path != "" {
		return path
	}
	p, _ := exec.LookPath(name)
	return p
}

// firstLine runs bin with args and returns the first line it printed
// ("" when it cannot run; wrk --version exits 1 after printing).
func firstLine(ctx context.Context, bin string, args ...string) string {
	if bin == "" {
		return ""
	}
	out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

// procField returns the value of the first "name: value" line of a /proc file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// load1 is the 1-minute load average (0 when unknown).
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
