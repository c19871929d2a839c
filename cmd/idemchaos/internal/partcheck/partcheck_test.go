package partcheck

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/histgen"
)

// tb is what both testing.T and rapid.T offer.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// inMemory is the reference: the whole history loaded and judged at once,
// step by step, with the verdict rules.
func inMemory(t tb, name string) (*history.History, checkers.Judgement, error) {
	t.Helper()
	ct := contractOf(t, name)
	c, err := checkers.ForContract(ct, checkers.DefaultNames(modeOf(t, name))...)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.Load(f, ct.LoadOptions())
	if err != nil {
		return nil, checkers.Judgement{}, err
	}
	return h, checkers.Judge(h, c, ct.Options()...), nil
}

// modeOf returns the mode of the history's meta event ("client" for a
// client run's).
func modeOf(t tb, name string) string {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var meta history.Event
	if err := history.NewReader(f).Next(&meta); err != nil {
		return ""
	}
	return meta.Mode
}

func contractOf(t tb, name string) checkers.Contract {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var meta history.Event
	if err := history.NewReader(f).Next(&meta); err != nil {
		return checkers.DefaultContract()
	}
	ct, err := checkers.ContractFromMeta(meta.Contract)
	if err != nil {
		return checkers.DefaultContract()
	}
	return ct
}

// same fails unless the partitioned check of name, cut into n partitions,
// says what the in-memory check says: the same error, or the same verdict,
// reason, count and violations for every invariant.
func same(t tb, tmp, name string, n int) {
	t.Helper()
	h, want, werr := inMemory(t, name)
	sum, got, gerr := CheckFile(name, Options{Partitions: n, Only: -1, Workers: 2, Dir: tmp, Contract: contractOf(t, name)})
	if werr != nil || gerr != nil {
		var wl, gl *history.LineError
		if !errors.As(werr, &wl) || !errors.As(gerr, &gl) || wl.Line != gl.Line || wl.Msg != gl.Msg {
			t.Fatalf("%s, %d partitions: in memory error %v, partitioned error %v", name, n, werr, gerr)
		}
		return
	}
	if sum.Events != h.Events || sum.Truncated != h.Truncated || sum.Interrupted != h.Interrupted {
		t.Fatalf("%s, %d partitions: summary %+v, in memory events %d truncated %v interrupted %q", name, n, sum, h.Events, h.Truncated, h.Interrupted)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("%s, %d partitions: %s", name, n, d)
	}
	if n > 1 {
		sum, got = acrossMachines(t, tmp, name, n)
		if sum.Events != h.Events || sum.Truncated != h.Truncated || sum.Interrupted != h.Interrupted || sum.Meta.Scenario != h.Meta.Scenario || sum.Meta.Seed != h.Meta.Seed {
			t.Fatalf("%s, %d machines: summary %+v, in memory events %d truncated %v interrupted %q", name, n, sum, h.Events, h.Truncated, h.Interrupted)
		}
		if d := diff(want, got); d != "" {
			t.Fatalf("%s, %d machines: %s", name, n, d)
		}
	}
}

// acrossMachines checks each of the n partitions of name alone, as n
// machines would, sends each share through its JSON form, and merges them
// in reverse order (the merge must not depend on the order given).
func acrossMachines(t tb, tmp, name string, n int) (*Summary, checkers.Judgement) {
	t.Helper()
	var parts []*Partial
	for i := n - 1; i >= 0; i-- {
		p, err := Check(name, Options{Partitions: n, Only: i, Workers: 1, Dir: tmp, Contract: contractOf(t, name)})
		if err != nil {
			t.Fatalf("%s, partition %d/%d: %v", name, i, n, err)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back Partial
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, &back)
	}
	sum, res, err := Merge(parts)
	if err != nil {
		t.Fatalf("%s, %d machines: %v", name, n, err)
	}
	return sum, res
}

// diff says how two judgements differ, step by step, or "".
func diff(want, got checkers.Judgement) string {
	if want.Verdict != got.Verdict || want.Reason != got.Reason || len(want.Steps) != len(got.Steps) {
		return fmt.Sprintf("judgement: got %s %q, %d steps; want %s %q, %d steps", got.Verdict, got.Reason, len(got.Steps), want.Verdict, want.Reason, len(want.Steps))
	}
	for i := range want.Steps {
		w, g := want.Steps[i], got.Steps[i]
		if w.Name != g.Name || w.Expect != g.Expect || w.Met != g.Met || w.Result.Reason != g.Result.Reason {
			return fmt.Sprintf("step %d: got %q expect %s met %v %q, want %q expect %s met %v %q", i+1, g.Name, g.Expect, g.Met, g.Result.Reason, w.Name, w.Expect, w.Met, w.Result.Reason)
		}
		if d := diffResult(w.Result, g.Result); d != "" {
			return fmt.Sprintf("step %d: %s", i+1, d)
		}
	}
	return ""
}

func diffResult(want, got checkers.Result) string {
	if len(want.Results) != len(got.Results) {
		return fmt.Sprintf("%d results, want %d", len(got.Results), len(want.Results))
	}
	for i := range want.Results {
		w, g := want.Results[i], got.Results[i]
		if w.Name != g.Name || w.Verdict != g.Verdict || w.Reason != g.Reason || w.Checked != g.Checked {
			return fmt.Sprintf("%s: got %s %q checked %d, want %s %q checked %d", w.Name, g.Verdict, g.Reason, g.Checked, w.Verdict, w.Reason, w.Checked)
		}
		if !reflect.DeepEqual(w.Violations, g.Violations) {
			return fmt.Sprintf("%s: violations differ:\n got %v\nwant %v", w.Name, g.Violations, w.Violations)
		}
	}
	if want.Verdict != got.Verdict || want.Checked != got.Checked || want.Name != got.Name {
		return fmt.Sprintf("composite: got %s %d %s, want %s %d %s", got.Verdict, got.Checked, got.Name, want.Verdict, want.Checked, want.Name)
	}
	return ""
}

func goldens(t *testing.T) []string {
	var files []string
	for _, pattern := range []string{"../../../../testdata/histories/*/*.jsonl", "../../../../testdata/verdicts/*.jsonl"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 50 {
		t.Fatalf("found %d golden histories, expected the whole set", len(files))
	}
	return files
}

func TestGoldenHistoriesSameAsInMemory(t *testing.T) {
	violations := 0
	for _, name := range goldens(t) {
		for _, n := range []int{1, 2, 3, 8} {
			same(t, t.TempDir(), name, n)
		}
		if _, r, err := inMemory(t, name); err == nil && r.Verdict == checkers.Violated {
			violations++
		}
	}
	// The differential test is worth something only if the set has both.
	if violations < 20 {
		t.Fatalf("only %d golden histories have a violation", violations)
	}
}

func TestGeneratedHistoriesSameAsInMemory(t *testing.T) {
	dir := t.TempDir()
	for i, cfg := range []histgen.Config{histgen.Default(20000), {Events: 5000, Tenants: 2, DupRate: 0.5, IndetRate: 0.3, Seed: 7}} {
		name := filepath.Join(dir, fmt.Sprintf("gen%d.jsonl", i))
		if err := os.WriteFile(name, histgen.Generate(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{2, 5} {
			same(t, t.TempDir(), name, n)
		}
	}
}

// TestRapidHistoriesSameAsInMemory draws small histories dense in the
// shapes that cross partitions: few keys shared by tenants and intents,
// intents that change key, bodies answered to several keys, crashes and
// heals, effects named by intent or only by key, cut-off endings.
func TestRapidHistoriesSameAsInMemory(t *testing.T) {
	dir := t.TempDir()
	violated := 0
	rapid.Check(t, func(rt *rapid.T) {
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"type":"meta","v":1,"scenario":"r","seed":1,"effects_recorded":%v}`+"\n", rapid.Bool().Draw(rt, "recorded"))
		ns := int64(0)
		op := int64(0)
		type open struct {
			op     int64
			intent string
		}
		var pending []open
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range steps {
			ns += rapid.Int64Range(0, 3e9).Draw(rt, "gap")
			switch rapid.IntRange(0, 9).Draw(rt, "kind") {
			case 0, 1, 2:
				op++
				intent := fmt.Sprintf("i%d", rapid.IntRange(0, 6).Draw(rt, "intent"))
				key := rapid.SampledFrom([]string{"k1", "k2", "k3", "k4", ""}).Draw(rt, "key")
				tenant := rapid.SampledFrom([]string{"t1", "t2"}).Draw(rt, "tenant")
				body := rapid.SampledFrom([]string{`{\"a\":1}`, `{\"a\":2}`}).Draw(rt, "req")
				keyField := ""
				if key != "" {
					keyField = `,"key":"` + key + `"`
				}
				fmt.Fprintf(&b, `{"type":"invoke","op":%d,"intent":"%s","tenant":"%s"%s,"attempt":1,"ns":%d,"req":{"method":"POST","path":"/o","body":"%s"}}`+"\n", op, intent, tenant, keyField, ns, body)
				pending = append(pending, open{op, intent})
			case 3, 4, 5:
				if len(pending) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(pending)-1).Draw(rt, "which")
				p := pending[i]
				pending = append(pending[:i], pending[i+1:]...)
				switch rapid.IntRange(0, 2).Draw(rt, "outcome") {
				case 0:
					status := rapid.SampledFrom([]int{201, 200, 409, 422, 500, 503}).Draw(rt, "status")
					body := rapid.SampledFrom([]string{"", `{\"id\":1}`, `{\"id\":2}`, `{\"id\":3}`}).Draw(rt, "resp")
					// Headers for replay-identical's stripped replays, judged
					// against every first-hand success of the endpoint.
					headers := rapid.SampledFrom([]string{``, `"headers":{"Location":"/o/1"},`, `"headers":{"Idempotent-Replayed":"true"},`}).Draw(rt, "headers")
					fmt.Fprintf(&b, `{"type":"ok","op":%d,"ns":%d,"resp":{"status":%d,%s"body":"%s"}}`+"\n", p.op, ns, status, headers, body)
				case 1:
					fmt.Fprintf(&b, `{"type":"info","op":%d,"ns":%d,"error":"timeout"}`+"\n", p.op, ns)
				default:
					fmt.Fprintf(&b, `{"type":"fail","op":%d,"ns":%d,"error":"refused"}`+"\n", p.op, ns)
				}
			case 6:
				kind := rapid.SampledFrom([]string{"crash", "response-drop", "latency", "retention-expiry", "replica-lag"}).Draw(rt, "fault")
				action := rapid.SampledFrom([]string{"fire", "heal", ""}).Draw(rt, "action")
				// Aimed at one attempt (any op so far, or one not yet
				// invoked), or at the whole service (op 0).
				at := rapid.Int64Range(0, op+1).Draw(rt, "fault-op")
				fmt.Fprintf(&b, `{"type":"fault","fault":"%s","action":"%s","op":%d,"ns":%d}`+"\n", kind, action, at, ns)
			default:
				intent := ""
				if rapid.Bool().Draw(rt, "named") {
					intent = fmt.Sprintf(`,"intent":"i%d"`, rapid.IntRange(0, 7).Draw(rt, "effect-intent"))
				}
				key := rapid.SampledFrom([]string{"k1", "k2", "k3", "k5"}).Draw(rt, "effect-key")
				tenant := rapid.SampledFrom([]string{"t1", "t2"}).Draw(rt, "effect-tenant")
				fmt.Fprintf(&b, `{"type":"effect","tenant":"%s","key":"%s"%s,"effect":"order %d","ns":%d}`+"\n", tenant, key, intent, rapid.IntRange(1, 9).Draw(rt, "id"), ns)
			}
		}
		switch rapid.IntRange(0, 5).Draw(rt, "ending") {
		case 0:
			fmt.Fprintf(&b, `{"type":"interrupted","error":"ctrl-c","ns":%d}`+"\n", ns)
		case 1:
			b.WriteString(`{"type":"ok","op":1,"ns`)
		}
		name := filepath.Join(dir, "r.jsonl")
		if err := os.WriteFile(name, b.Bytes(), 0o600); err != nil {
			rt.Fatal(err)
		}
		if _, r, err := inMemory(rt, name); err == nil && r.Verdict == checkers.Violated {
			violated++
		}
		same(rt, dir, name, rapid.SampledFrom([]int{1, 2, 3, 4}).Draw(rt, "n"))
	})
	if violated == 0 {
		t.Fatal("no generated history had a violation: the generator judges nothing")
	}
}

func TestPartitionOfNChecksOnlyItsKeys(t *testing.T) {
	name := filepath.Join(t.TempDir(), "g.jsonl")
	if err := os.WriteFile(name, histgen.Generate(histgen.Default(4000)), 0o600); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i := range 3 {
		sum, r, err := CheckFile(name, Options{Partitions: 3, Only: i, Dir: t.TempDir(), Contract: checkers.DefaultContract()})
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Checked) == 0 || sum.Checked[0] != i {
			t.Fatalf("partition %d/3 checked key partitions %v", i, sum.Checked)
		}
		total += last(r).Results[0].Checked
	}
	_, whole, err := inMemory(t, name)
	if err != nil {
		t.Fatal(err)
	}
	if want := last(whole).Results[0].Checked; total != want || want == 0 {
		t.Fatalf("the three partitions checked %d %s units, the whole history %d", total, last(whole).Results[0].Name, want)
	}
	if _, _, err := CheckFile(name, Options{Partitions: 3, Only: 3, Contract: checkers.DefaultContract()}); err == nil || !strings.Contains(err.Error(), "3/3") {
		t.Fatalf("partition 3/3: got %v, want an error", err)
	}
}

// TestCancelledCheckStopsAndCleansUp: a check cut short (Ctrl-C) returns
// the context's error and leaves no partition file behind.
func TestCancelledCheckStopsAndCleansUp(t *testing.T) {
	name := filepath.Join(t.TempDir(), "g.jsonl")
	if err := os.WriteFile(name, histgen.Generate(histgen.Default(20000)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	_, _, err := CheckFile(name, Options{Partitions: 4, Only: -1, Dir: dir, Contract: checkers.DefaultContract(), Context: ctx})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("partition files left behind: %v", left)
	}
}

// TestMergeRefusesWhatIsNotOneCheck: a missing or doubled partition, shares
// of different counts, files or contracts give an error, never a verdict.
func TestMergeRefusesWhatIsNotOneCheck(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "g.jsonl")
	if err := os.WriteFile(name, histgen.Generate(histgen.Default(3000)), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(other, histgen.Generate(histgen.Config{Events: 3000, Seed: 2}), 0o600); err != nil {
		t.Fatal(err)
	}
	share := func(file string, i, n int, o Options) *Partial {
		t.Helper()
		o.Partitions, o.Only, o.Dir = n, i, t.TempDir()
		if o.Contract.Profile.Name == "" {
			o.Contract = checkers.DefaultContract()
		}
		p, err := Check(file, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p0, p1 := share(name, 0, 2, Options{}), share(name, 1, 2, Options{})
	if p0.Source.SHA256 == "" || p0.Source.SHA256 != p1.Source.SHA256 || p0.Source.Size == 0 {
		t.Fatalf("sources %+v and %+v: want the same size and hash", p0.Source, p1.Source)
	}
	if _, r, err := Merge([]*Partial{p1, p0}); err != nil || r.Verdict != checkers.Pass {
		t.Fatalf("the two shares: %v %v, want a pass", r.Verdict, err)
	}
	loose := checkers.DefaultContract()
	loose.Fingerprint = "strict"
	whole, err := Check(name, Options{Partitions: 2, Only: -1, Dir: t.TempDir(), Contract: checkers.DefaultContract()})
	if err != nil {
		t.Fatal(err)
	}
	for what, tc := range map[string]struct {
		parts []*Partial
		want  string
	}{
		"missing":        {[]*Partial{p0}, "partition 1/2 of " + name + " missing"},
		"twice":          {[]*Partial{p0, p1, p1}, "partition 1/2 given twice"},
		"other count":    {[]*Partial{p0, p1, share(name, 2, 3, Options{})}, "different counts"},
		"other file":     {[]*Partial{p0, share(other, 1, 2, Options{})}, "of another file"},
		"other contract": {[]*Partial{p0, share(name, 1, 2, Options{Contract: loose})}, "other invariants or contract"},
		"other checks":   {[]*Partial{p0, share(name, 1, 2, Options{Names: []string{"exactly-once"}})}, "other invariants or contract"},
		"whole":          {[]*Partial{whole}, "checked whole"},
		"none":           {nil, "no partitions"},
	} {
		if _, _, err := Merge(tc.parts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", what, err, tc.want)
		}
	}
}

// TestSharesFromSeparateProcesses checks each partition in its own process
// (this test binary run again), as N machines would: each process cuts the
// history by its own hashes, so the shares make one check only if every
// process cuts it the same way. The merge must equal the in-memory check.
func TestSharesFromSeparateProcesses(t *testing.T) {
	if os.Getenv("PARTCHECK_SHARE") != "" {
		return // this is a helper process
	}
	dir := t.TempDir()
	name := filepath.Join(dir, "g.jsonl")
	if err := os.WriteFile(name, histgen.Generate(histgen.Config{Events: 6000, Tenants: 3, DupRate: 0.3, IndetRate: 0.2, Seed: 11}), 0o600); err != nil {
		t.Fatal(err)
	}
	const n = 3
	var parts []*Partial
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestShareHelper$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("PARTCHECK_SHARE=%d/%d/%s", i, n, name))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("partition %d/%d: %v", i, n, err)
		}
		start := bytes.IndexByte(out, '{')
		end := bytes.LastIndexByte(out, '}')
		if start < 0 || end < start {
			t.Fatalf("partition %d/%d printed no share:\n%s", i, n, out)
		}
		var p Partial
		if err := json.Unmarshal(out[start:end+1], &p); err != nil {
			t.Fatalf("partition %d/%d: %v", i, n, err)
		}
		parts = append(parts, &p)
	}
	sum, got, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	h, want, err := inMemory(t, name)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Events != h.Events {
		t.Fatalf("merged %d events, in memory %d", sum.Events, h.Events)
	}
	if d := diff(want, got); d != "" {
		t.Fatal(d)
	}
}

// TestShareHelper is the other process of TestSharesFromSeparateProcesses:
// it prints the share PARTCHECK_SHARE (index/count/file) names.
func TestShareHelper(t *testing.T) {
	spec := os.Getenv("PARTCHECK_SHARE")
	if spec == "" {
		return // only run as the helper process
	}
	var i, n int
	var name string
	if _, err := fmt.Sscanf(strings.Replace(spec, "/", " ", 2), "%d %d %s", &i, &n, &name); err != nil {
		t.Fatal(err)
	}
	p, err := Check(name, Options{Partitions: n, Only: i, Dir: t.TempDir(), Contract: checkers.DefaultContract()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s\n", b)
}

// TestInterruptSparesTheChecksOfALoadedUnit: an interrupt that arrives while
// a unit is loading stops it before its checks, and before the second pass
// (twins) loads anything: on a big history either is minutes of work after
// Ctrl-C.
func TestInterruptSparesTheChecksOfALoadedUnit(t *testing.T) {
	name := filepath.Join(t.TempDir(), "g.jsonl")
	if err := os.WriteFile(name, histgen.Generate(histgen.Default(2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sp, err := SplitFile(f, t.TempDir(), 2)
	if err != nil || sp.Err != nil {
		t.Fatal(err, sp.Err)
	}
	o := Options{Partitions: 2, Only: -1, Contract: checkers.DefaultContract()}
	// Not interrupted, the unit is checked: the test below can fail.
	if res, _, _, err := checkUnit(context.Background(), sp.KeyParts[:1], true, []string{"exactly-once"}, nil, o, sp); err != nil || len(res) == 0 || res[0][0].Checked == 0 {
		t.Fatalf("uninterrupted: %v, %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, _, _, err := checkUnit(ctx, sp.KeyParts[:1], true, []string{"exactly-once"}, nil, o, sp); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted unit: got %v, %v; want context.Canceled", res, err)
	}
	if tw, err := twinsOf(ctx, sp.KeyParts[:1], map[checkers.TwinScope]bool{}, nil, o, sp); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted twins pass: got %v, %v; want context.Canceled", tw, err)
	}
}

// last is the result of a judgement's last step: the whole history's.
func last(j checkers.Judgement) checkers.Result { return j.Steps[len(j.Steps)-1].Result }

// TestClientCorpusHistoriesSameAsInMemory checks the real histories of the
// client corpus (examples/clients: each client, good and flawed, recorded
// through the probes) cut by intent into N partitions, in one process and
// as N machines merged: the same verdict, reasons and violations as the
// whole check. The cross-intent judgements (backoff's lockstep and growth,
// key-per-intent, the counts in reasons) are made at the merge, from
// parts that each saw a few intents.
func TestClientCorpusHistoriesSameAsInMemory(t *testing.T) {
	files, err := filepath.Glob("../../../../examples/clients/testdata/recorded/*.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 12 {
		t.Fatalf("found %d recorded client histories, expected the corpus (12)", len(files))
	}
	dir := t.TempDir()
	violated := map[string]bool{}
	for _, gz := range files {
		name := filepath.Join(dir, strings.TrimSuffix(filepath.Base(gz), ".gz"))
		out, err := exec.Command("gzip", "-dc", gz).Output()
		if err != nil {
			t.Fatalf("%s: %v", gz, err)
		}
		if err := os.WriteFile(name, out, 0o600); err != nil {
			t.Fatal(err)
		}
		_, want, err := inMemory(t, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, st := range want.Steps {
			for _, r := range st.Result.Results {
				if r.Verdict == checkers.Violated {
					violated[r.Name] = true
				}
			}
		}
		for _, n := range []int{2, 7} {
			same(t, t.TempDir(), name, n)
		}
		// The split spreads the intents: at 16 partitions a history of
		// dozens of intents is checked in many groups, not one — unless
		// its intents share keys (a key hashed from the body: the
		// intents of equal orders are checked together).
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := SplitFile(f, t.TempDir(), 16)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		shared := false
		for _, st := range want.Steps {
			for _, r := range st.Result.Results {
				shared = shared || (r.Name == "key-per-intent" && r.Verdict == checkers.Violated)
			}
		}
		if len(sp.Groups) < 8 && !shared {
			t.Errorf("%s: 16 partitions made %d groups: the intents are not spread", name, len(sp.Groups))
		}
	}
	// Worth something only if the corpus breaks the invariants that span
	// intents.
	for _, inv := range []string{"backoff", "key-per-intent", "bounded", "truthful-outcome", "exactly-once", "key-stable"} {
		if !violated[inv] {
			t.Errorf("no recorded client history violates %s", inv)
		}
	}
}

// TestRapidClientHistoriesSameAsInMemory draws client runs' histories dense
// in what spans intents: an outage hitting every intent (lockstep or
// jittered retries, growing or fixed waits), keys shared between intents
// or changed on a retry, a per-intent and a global budget, beliefs true and
// false, effects attributed or not, intents that sent nothing, steps.
func TestRapidClientHistoriesSameAsInMemory(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	rapid.Check(t, func(rt *rapid.T) {
		type line struct {
			ns  int64
			raw string
		}
		var lines []line
		add := func(ns int64, format string, args ...any) {
			lines = append(lines, line{ns, fmt.Sprintf(format, args...)})
		}
		jitter := rapid.SampledFrom([]string{"required", "optional"}).Draw(rt, "jitter")
		meta := fmt.Sprintf(`{"type":"meta","v":1,"scenario":"r","seed":1,"mode":"client","effects_recorded":%v,"client_contract":{"budget":%d,"global_budget":%d,"jitter":"%s","unknown":"%s"}}`,
			rapid.Bool().Draw(rt, "recorded"), rapid.IntRange(2, 5).Draw(rt, "budget"), rapid.SampledFrom([]int{0, 10, 30}).Draw(rt, "global"),
			jitter, rapid.SampledFrom([]string{"allowed", "forbidden"}).Draw(rt, "unknown"))
		if rapid.Bool().Draw(rt, "steps") {
			add(0, `{"type":"step","name":"first","expect":"clean","ns":0}`)
			add(2e9, `{"type":"step","name":"second","expect":"violation","ns":2000000000}`)
		}
		intents := rapid.IntRange(1, 14).Draw(rt, "intents")
		lockstep := rapid.Bool().Draw(rt, "lockstep")
		op := int64(0)
		for i := range intents {
			in := fmt.Sprintf("i-%d", i)
			start := int64(i) * 1e6
			if rapid.Bool().Draw(rt, "step2") {
				start += 2e9
			}
			if rapid.IntRange(0, 5).Draw(rt, "invocation") > 0 {
				add(start, `{"type":"invocation","intent":"%s","tenant":"t1","ns":%d,"action":"start","body":"{\"n\":%d}"}`, in, start, rapid.IntRange(0, 2).Draw(rt, "body"))
			}
			key := rapid.SampledFrom([]string{in, in, "shared", "k-1", ""}).Draw(rt, "key")
			ns := start + 1e6
			wait := int64(100e6)
			for a := range rapid.IntRange(0, 6).Draw(rt, "attempts") {
				op++
				if rapid.IntRange(0, 6).Draw(rt, "rekey") == 0 {
					key = fmt.Sprintf("%s-%d", in, a)
				}
				keyField := ""
				if key != "" {
					keyField = `,"key":"` + key + `"`
				}
				add(ns, `{"type":"invoke","op":%d,"intent":"%s","tenant":"t1","attempt":%d,"ns":%d,"req":{"method":"POST","path":"/o","body":"{\"n\":1}"}%s}`, op, in, a+1, ns, keyField)
				end := ns + 2e6
				switch rapid.IntRange(0, 4).Draw(rt, "outcome") {
				case 0:
					add(end, `{"type":"ok","op":%d,"ns":%d,"resp":{"status":201,"body":"{\"id\":\"%s\"}"}}`, op, end, in)
				case 1:
					add(ns+5e5, `{"type":"fault","fault":"outage","op":%d,"ns":%d}`, op, ns+5e5)
					add(end, `{"type":"ok","op":%d,"ns":%d,"resp":{"status":503,"body":"{}"},"by":"proxy","forwarded":false}`, op, end)
				case 2:
					ra := rapid.SampledFrom([]int{0, 0, 1000}).Draw(rt, "retry-after")
					add(end, `{"type":"ok","op":%d,"ns":%d,"resp":{"status":%d,"body":"{}"},"by":"proxy","forwarded":%v,"retry_after_ms":%d}`,
						op, end, rapid.SampledFrom([]int{429, 502, 422}).Draw(rt, "status"), rapid.Bool().Draw(rt, "forwarded"), ra)
				case 3:
					add(end, `{"type":"info","op":%d,"ns":%d,"error":"reset"}`, op, end)
				default:
					add(end, `{"type":"ok","op":%d,"ns":%d,"resp":{"status":503,"body":"{}"}}`, op, end)
				}
				if !lockstep {
					wait = rapid.Int64Range(1e6, 400e6).Draw(rt, "wait")
				} else if rapid.Bool().Draw(rt, "grow") {
					wait *= 2
				}
				ns = end + wait
			}
			if b := rapid.IntRange(0, 3).Draw(rt, "belief"); b > 0 {
				belief := []string{"", "success", "failure", "unknown"}[b]
				add(ns, `{"type":"belief","intent":"%s","ns":%d,"belief":"%s","exit":%d}`, in, ns, belief, []int{0, 0, 1, 75}[b])
			}
			for range rapid.IntRange(0, 2).Draw(rt, "effects") {
				named := in
				if rapid.IntRange(0, 4).Draw(rt, "stray") == 0 {
					named = "i-99"
				}
				add(ns+1, `{"type":"effect","intent":"%s","tenant":"t1","key":"%s","effect":"order %s","ns":%d}`, named, key, in, ns+1)
			}
		}
		slices.SortStableFunc(lines, func(a, b line) int { return cmp.Compare(a.ns, b.ns) })
		var b bytes.Buffer
		b.WriteString(meta + "\n")
		for _, l := range lines {
			b.WriteString(l.raw + "\n")
		}
		if rapid.IntRange(0, 5).Draw(rt, "interrupted") == 0 {
			b.WriteString(`{"type":"interrupted","error":"ctrl-c","ns":9000000000}` + "\n")
		}
		name := filepath.Join(dir, "c.jsonl")
		if err := os.WriteFile(name, b.Bytes(), 0o600); err != nil {
			rt.Fatal(err)
		}
		if _, r, err := inMemory(rt, name); err == nil {
			for _, st := range r.Steps {
				for _, res := range st.Result.Results {
					if res.Verdict == checkers.Violated {
						seen[res.Name] = true
					}
				}
			}
		}
		same(rt, dir, name, rapid.SampledFrom([]int{2, 3, 5}).Draw(rt, "n"))
	})
	// The generator must reach the judgements that span intents.
	for _, inv := range []string{"backoff", "key-per-intent", "bounded", "truthful-outcome", "exactly-once", "key-stable"} {
		if !seen[inv] {
			t.Errorf("no drawn history violated %s", inv)
		}
	}
}
