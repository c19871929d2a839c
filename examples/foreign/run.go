package foreign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// Verdict is how one run of a case came out, judged against what the case
// expects.
type Verdict string

// Verdicts. Only Clean (for a correct service) and Caught (for a flawed
// one) are right.
const (
	Clean          Verdict = "clean"
	Caught         Verdict = "caught"
	FalseAlarm     Verdict = "false-alarm"     // a correct service reported violating something
	Missed         Verdict = "missed"          // a flawed service judged clean
	WrongInvariant Verdict = "wrong-invariant" // a flawed service caught, but not by the expected invariant
	WrongCause     Verdict = "wrong-cause"     // the expected invariant, with a cause that does not match
	Inconclusive   Verdict = "inconclusive"    // an unknown verdict and no violation
	SetupNamed     Verdict = "setup-named"     // a setup problem named as one: nothing to judge, its reason given
	Error          Verdict = "error"           // the run could not be judged (setup, scenario, oracle)
)

// SeedResult is one run of a case.
type SeedResult struct {
	Seed    int64
	Verdict Verdict
	// Violated lists the invariants violated, in canonical order.
	Violated []string
	// Detail explains a verdict that is not right: the violations, the
	// reason for unknown, the error.
	Detail   string
	History  string
	Requests int64
	Elapsed  time.Duration
	// RunVerdict and RunMet are what idemchaos itself said of the run:
	// an offline check of History must say the same.
	RunVerdict checkers.Verdict
	RunMet     bool
	// Made and Keys are, for a case with a Listing, the orders the service
	// really made for this run's keys and how many keys have one; Reported
	// is the duplicates exactly-once reported (an intent's N effects are
	// N-1 duplicates).
	Made, Keys, Reported int
}

// Right says the verdict is the one the case expects.
func (c Case) Right(v Verdict) bool {
	switch {
	case c.Setup != "":
		return v == SetupNamed
	case c.Correct():
		return v == Clean
	}
	return v == Caught
}

// Judge classifies one run of the case.
func (c Case) Judge(seed int64, out *harness.Outcome, err error) SeedResult {
	r := SeedResult{Seed: seed}
	if out != nil {
		r.History, r.Requests, r.Elapsed = out.HistoryPath, out.Requests, out.Elapsed
		r.Violated = out.Caught()
		r.RunVerdict, r.RunMet = out.Verdict(), out.Met()
	}
	if err != nil || out == nil || len(out.Steps) == 0 || out.Environment() != "" {
		r.Verdict = Error
		r.Detail = "the run judged nothing"
		if err != nil {
			r.Detail = err.Error()
		} else if out != nil && out.Environment() != "" {
			r.Detail = out.Environment()
		}
		return r
	}
	var failures, causes []string
	for _, st := range out.Steps {
		failures = append(failures, st.Result.Failures()...)
		for _, res := range leaves(st.Result) {
			if res.Name != c.Expect {
				continue
			}
			for _, v := range res.Violations {
				causes = append(causes, v.Cause)
			}
		}
	}
	r.Detail = strings.Join(failures, "\n")
	switch {
	case c.Setup != "" && len(r.Violated) > 0:
		r.Verdict = FalseAlarm // the setup problem read as the service's bug
	case c.Setup != "" && out.Verdict() == checkers.Unknown && namesSetup(out, c.Setup):
		r.Verdict = SetupNamed
	case c.Setup != "":
		r.Verdict = Inconclusive
		r.Detail = fmt.Sprintf("%s, and no step's reason says %q\n%s", out.Verdict(), c.Setup, r.Detail)
	case c.Correct() && len(r.Violated) > 0:
		r.Verdict = FalseAlarm
	case c.Correct() && out.Verdict() == checkers.Pass:
		r.Verdict = Clean
	case c.Correct():
		r.Verdict = Inconclusive
	case slices.Contains(r.Violated, c.Expect):
		r.Verdict = WrongCause
		for _, cause := range causes {
			for _, phrase := range strings.Split(c.Cause, "|") {
				if strings.Contains(strings.ToLower(cause), phrase) {
					r.Verdict = Caught
				}
			}
		}
		if r.Verdict == WrongCause {
			r.Detail = fmt.Sprintf("causes %q do not mention %q\n%s", causes, c.Cause, r.Detail)
		}
	case len(r.Violated) > 0:
		r.Verdict = WrongInvariant
	case out.Verdict() == checkers.Pass:
		r.Verdict = Missed
	default:
		r.Verdict = Inconclusive
	}
	return r
}

// namesSetup says a step's reason names the setup problem phrase.
func namesSetup(out *harness.Outcome, phrase string) bool {
	for _, st := range out.Steps {
		if strings.Contains(strings.ToLower(st.Result.Reason), phrase) {
			return true
		}
	}
	return false
}

// leaves flattens a composite result into its invariants' results.
func leaves(r checkers.Result) []checkers.Result {
	if len(r.Results) == 0 {
		return []checkers.Result{r}
	}
	var out []checkers.Result
	for _, sub := range r.Results {
		out = append(out, leaves(sub)...)
	}
	return out
}

// Env is what running cases needs.
type Env struct {
	// Bin is the foreignsvc binary (see [Build]).
	Bin string
	// Root is the module root (see [ModuleRoot]).
	Root string
	// Database returns a fresh database of a server kind (Postgres,
	// MariaDB) for a case, and a function that drops it. SQLite files are
	// made by [Env.Run] itself.
	Database func(ctx context.Context, kind DatabaseKind, name string) (DB, func(), error)
	// HistoryDir keeps the runs' histories ("" = the system temp dir).
	HistoryDir string
}

// DB is one case's database: the address its service is given and the one
// its scenario's oracle reads (${FOREIGN_DSN}), which differ where the
// service's driver and idemchaos write addresses differently (MariaDB:
// root@tcp(127.0.0.1:PORT)/db for go-sql-driver/mysql, mysql://… for
// idemchaos; SQLite: a path, and sqlite:PATH).
type DB struct{ Service, Oracle string }

// envMu serialises scenario loading: the scenarios name the service's
// address and database through environment variables.
var envMu sync.Mutex

// LoadScenario loads the case's scenario for a service at url (and dsn).
// The scenario files name them as ${FOREIGN_URL} and ${FOREIGN_DSN}, the way
// a team's CI passes addresses to the scenarios it keeps in its repository.
func (e Env) LoadScenario(c Case, url, dsn string) (*scenarios.Scenario, error) {
	envMu.Lock()
	defer envMu.Unlock()
	vars := map[string]string{"FOREIGN_URL": url, "FOREIGN_DSN": dsn}
	for k, v := range c.Env {
		vars[k] = v
	}
	for k, v := range vars {
		old, had := os.LookupEnv(k)
		_ = os.Setenv(k, v)
		defer func() {
			if had {
				_ = os.Setenv(k, old)
			} else {
				_ = os.Unsetenv(k)
			}
		}()
	}
	return scenarios.Load(filepath.Join(e.Root, c.Scenario))
}

// database makes the case's database, if it needs one.
func (e Env) database(ctx context.Context, c Case) (DB, func(), error) {
	switch c.Database {
	case "":
		return DB{}, func() {}, nil
	case SQLite:
		dir, err := os.MkdirTemp("", "foreign-sqlite-")
		if err != nil {
			return DB{}, nil, err
		}
		path := filepath.Join(dir, c.Name+".sqlite")
		return DB{Service: path, Oracle: "sqlite:" + path}, func() { _ = os.RemoveAll(dir) }, nil
	}
	if e.Database == nil {
		return DB{}, nil, fmt.Errorf("%s needs %s and no database was given", c.Name, c.Database)
	}
	return e.Database(ctx, c.Database, c.Name)
}

// Run starts the case's service as its own process, runs its scenario once
// per seed through idemchaos's Go API against it, stops it, and returns one
// result per seed (each also passed to onSeed as it comes, when not nil).
// An error means the case could not run at all (the service did not start,
// the scenario is invalid, the environment failed).
func (e Env) Run(ctx context.Context, c Case, seeds []int64, onSeed func(SeedResult)) ([]SeedResult, error) {
	db, drop, err := e.database(ctx, c)
	if err != nil {
		return nil, err
	}
	defer drop()
	svc, err := Start(ctx, e.Bin, e.Root, c, db.Service)
	if err != nil {
		return nil, err
	}
	defer svc.Stop()
	s, err := e.LoadScenario(c, svc.URL, db.Oracle)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: harness.EnvExternal, TargetURL: svc.URL, Scenarios: []*scenarios.Scenario{s}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	defer closeEnv(context.WithoutCancel(ctx))
	r.HistoryDir = e.HistoryDir
	var out []SeedResult
	for _, seed := range seeds {
		o, err := r.Run(ctx, s, harness.RunOptions{Seed: seed})
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		res := c.Judge(seed, o, err)
		if c.Listing != "" && res.History != "" {
			if err := countMade(ctx, svc.URL+c.Listing, &res); err != nil {
				res.Verdict, res.Detail = Error, err.Error()
			}
			res.Reported = reportedDuplicates(o)
		}
		if svc.Exited() {
			res.Verdict, res.Detail = Error, "the service exited:\n"+svc.Stderr()
		}
		out = append(out, res)
		if onSeed != nil {
			onSeed(res)
		}
		if svc.Exited() {
			return out, errors.New(res.Detail)
		}
	}
	return out, nil
}
