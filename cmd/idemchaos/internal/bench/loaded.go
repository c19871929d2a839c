package bench

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
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

// startLoad starts LoadBurners CPU-bound burners: stress-ng processes when
// stress-ng is installed, else goroutines spinning on locked OS threads (a
// fresh CI machine may lack stress-ng). stop ends them and waits.
func startLoad() (how string, stop func(), err error) {
	if path, lerr := exec.LookPath("stress-ng"); lerr == nil {
		var cmds []*exec.Cmd
		stop = func() {
			for _, c := range cmds {
				_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
				_ = c.Wait()
			}
		}
		for range LoadBurners {
			// Bounded even if this process dies without stopping it: the
			// parent-death signal, and stress-ng's own timeout.
			c := exec.Command(path, "--cpu", "1", "--timeout", "6h", "--quiet")
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if err := c.Start(); err != nil {
				stop()
				return "", nil, fmt.Errorf("start stress-ng: %w", err)
			}
			cmds = append(cmds, c)
		}
		return fmt.Sprintf("%d × `stress-ng --cpu 1` (each one CPU-bound process)", LoadBurners), stop, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range LoadBurners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			x := uint64(1)
			for ctx.Err() == nil {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	return fmt.Sprintf("%d Go CPU burners (spinning goroutines on locked OS threads; stress-ng is not installed)", LoadBurners),
		func() { cancel(); wg.Wait() }, nil
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
