package bench

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// LoadBurners is how many CPU-bound processes a loaded bench runs alongside.
const LoadBurners = 2

// Load is the CPU load a loaded bench put on the machine.
type Load struct {
	// How says what burned the CPU, e.g. "2 × stress-ng --cpu 1".
	How string
	// Load1 is the 1-minute load average once the burners ran, and at the end.
	Load1Start, Load1End float64
}

// startLoad starts LoadBurners CPU-bound processes: stress-ng when it is
// installed, else shell busy loops (sh is on every machine this runs on).
// stop ends them and waits.
//
// Processes, never goroutines of this one: a machine's other jobs are other
// processes, which the kernel schedules beside the harness, while burners
// inside this process take the Go scheduler's processors from the harness
// itself. Every packet between the service and its database crosses the
// harness's in-process Toxiproxy, so with two spinning goroutines on this
// 2-core machine a 5 ms slow-db became tens of milliseconds a round trip,
// the reference took 0.8 s to restart instead of 50 ms, and storm's
// correct reference was accused at 6 seeds of 100 of deciding a key 3.4 s
// after a crash healed — the harness's starvation read as the service's.
func startLoad() (how string, stop func(), err error) {
	argv, how := []string{"sh", "-c", "while :; do :; done"}, "`sh -c 'while :; do :; done'`"
	if path, lerr := exec.LookPath("stress-ng"); lerr == nil {
		// stress-ng's own timeout bounds it even if this process dies
		// without stopping it.
		argv, how = []string{path, "--cpu", "1", "--timeout", "6h", "--quiet"}, "`stress-ng --cpu 1`"
	}
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
	}
	for range LoadBurners {
		c := exec.Command(argv[0], argv[1:]...)
		// Bounded even if this process dies without stopping it: the
		// parent-death signal.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			stop()
			return "", nil, fmt.Errorf("start a CPU burner (%s): %w", argv[0], err)
		}
		cmds = append(cmds, c)
	}
	return fmt.Sprintf("%d × %s (each one CPU-bound process)", LoadBurners, how), stop, nil
}

// loadedMD is the section of a loaded run: what loaded the machine, and the
// errors and inconclusive runs of the gate under that load.
func (r *Report) loadedMD(p printer) {
	l := r.Load
	if l == nil {
		return
	}
	p("## Gate on a loaded machine")
	p("")
	p("`idemchaos bench --loaded`: the quick gate and `storm` with %s running alongside (1-min load average %.2f after start-up of the burners, %.2f at the end). Targets: 0 errors, 0 inconclusive.", l.How, l.Load1Start, l.Load1End)
	p("")
	p("| runs of the correct reference | runs | pass | violations | inconclusive | errors |")
	p("|---|---|---|---|---|---|")
	if d := r.Detection; d != nil {
		n, pass, viol, inc, errs := tally(d.Reference)
		p("| quick gate: bundled suite, seed 1 | %d | %d | %d | %d | %d |", n, pass, viol, inc, errs)
		escapes := 0
		for _, m := range d.Mutants {
			escapes += len(m.Escapes)
		}
		p("| quick gate: mutants × %d seeds, escapes | %d mutants | | | | %d escapes |", r.Options.Seeds, len(d.Mutants), escapes)
	}
	if f := r.FalseAlarms; f != nil {
		_, _, _, inc, errs := tally(f.Bad)
		p("| `%s` × %d seeds | %d | %d | %d | %d | %d |", f.Scenario, f.Seeds, f.Seeds, f.Pass, f.Violations, inc, errs)
	}
	p("")
}

// tally counts verdicts: runs, passes, violations, inconclusive, errors.
func tally(vs []RunVerdict) (n, pass, viol, inc, errs int) {
	for _, v := range vs {
		n++
		switch v.Verdict {
		case VerdictPass:
			pass++
		case VerdictViolation:
			viol++
		case VerdictError:
			errs++
		default:
			inc++
		}
	}
	return n, pass, viol, inc, errs
}

// loadSettle lets the load average see the burners before it is read.
const loadSettle = 5 * time.Second
