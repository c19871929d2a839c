package partcheck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/histgen"
)

// sharedBodies writes a history of n intents over three tenants, each
// answered 201 with body(i) and, if conflict is set, doubled by a click
// answered 409 with one problem document for all.
func sharedBodies(t *testing.T, n int, body func(i int) string, conflict bool) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(`{"type":"meta","v":1,"scenario":"shared","seed":1,"effects_recorded":true}` + "\n")
	op, ns := int64(0), int64(0)
	for i := range n {
		tenant, key := fmt.Sprintf("t%d", i%3), fmt.Sprintf("k-%d", i)
		invoke := func() int64 {
			op++
			ns += 1000
			fmt.Fprintf(&b, `{"type":"invoke","op":%d,"intent":"i%d","tenant":"%s","key":"%s","attempt":1,"ns":%d,"req":{"method":"POST","path":"/o","body":"{}"}}`+"\n", op, i, tenant, key, ns)
			return op
		}
		first := invoke()
		if conflict {
			second := invoke()
			ns += 1000
			fmt.Fprintf(&b, `{"type":"ok","op":%d,"ns":%d,"resp":{"status":409,"body":"{\"title\":\"Conflict\"}"}}`+"\n", second, ns)
		}
		ns += 1000
		fmt.Fprintf(&b, `{"type":"effect","tenant":"%s","key":"%s","intent":"i%d","effect":"order %d","ns":%d}`+"\n", tenant, key, i, i, ns)
		fmt.Fprintf(&b, `{"type":"ok","op":%d,"ns":%d,"resp":{"status":201,"body":%q}}`+"\n", first, ns, body(i))
	}
	name := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(name, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// bodyLines returns the number of lines of each body partition of a split.
func bodyLines(t *testing.T, name string, n int) []int {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sp, err := SplitFile(f, t.TempDir(), n)
	if err != nil || sp.Err != nil {
		t.Fatal(err, sp.Err)
	}
	var lines []int
	for _, p := range sp.BodyParts {
		b, err := os.ReadFile(p.File)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Count(b, []byte("\n")))
	}
	return lines
}

// The 409s of a history share one body, which tenant-isolation does not
// judge: they stay out of the body partitions, which the distinct 2xx
// bodies share evenly (all 409s went to one of them, doubling it).
func TestSplit_ConflictsSharingABodyLeaveBodyPartitionsBalanced(t *testing.T) {
	const n, parts = 2000, 4
	name := sharedBodies(t, n, func(i int) string { return fmt.Sprintf(`{"id":%d}`, i) }, true)
	lines := bodyLines(t, name, parts)
	total := 0
	for _, l := range lines {
		total += l
	}
	if want := parts * (1 + 2*n/parts); total != want {
		t.Fatalf("body partitions hold %d lines (%v), want %d: the meta event in each and two lines per 201", total, lines, want)
	}
	for _, l := range lines {
		if l > total/parts*13/10 {
			t.Fatalf("body partitions unbalanced: %v lines", lines)
		}
	}
	same(t, t.TempDir(), name, parts)
}

// Every tenant is answered {"ok":true} under many keys: the body is
// generic, so the split stops writing it to its body partition after the
// answers that show it, and the check still counts every answer.
func TestSplit_SuccessesSharingAGenericBodyLeaveBodyPartitionsSmall(t *testing.T) {
	const n, parts = 2000, 4
	name := sharedBodies(t, n, func(int) string { return `{"ok":true}` }, false)
	for _, l := range bodyLines(t, name, parts) {
		// The meta event, and at most the first answer of each of three
		// tenants plus the second key of one: two lines each.
		if l > 1+2*4 {
			t.Fatalf("a body partition holds %d lines: the generic body's answers were all written", l)
		}
	}
	same(t, t.TempDir(), name, parts)
	same(t, t.TempDir(), name, 1)
}

// The split counts distinct scopes (tenant, method, path, key) per key
// partition; their sum is the count over the whole history.
func TestSplit_KeysCountsDistinctScopes(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"type":"meta","v":1,"scenario":"scopes","seed":1}` + "\n")
	op := 0
	want := map[string]bool{}
	for _, tenant := range []string{"t1", "t2"} {
		for _, path := range []string{"/a", "/b"} {
			for k := range 7 {
				for range 2 { // a retry: same scope
					op++
					key := fmt.Sprintf("k%d", k)
					if k == 0 {
						key = "" // no key: no scope
					} else {
						want[tenant+" "+path+" "+key] = true
					}
					fmt.Fprintf(&b, `{"type":"invoke","op":%d,"tenant":"%s","key":"%s","attempt":1,"ns":%d,"req":{"method":"POST","path":"%s","body":""}}`+"\n", op, tenant, key, op, path)
					fmt.Fprintf(&b, `{"type":"ok","op":%d,"ns":%d,"resp":{"status":201,"body":""}}`+"\n", op, op)
				}
			}
		}
	}
	gen := histgen.Generate(histgen.Config{Events: 3000, Tenants: 2, DupRate: 0.3, IndetRate: 0.2, Seed: 3})
	h, err := history.Load(bytes.NewReader(gen), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	genWant := map[string]bool{}
	for _, a := range h.Attempts {
		if a.Key != "" {
			genWant[a.Tenant+" "+a.Method+" "+a.Path+" "+a.Key] = true
		}
	}
	for _, c := range []struct {
		data []byte
		want int
	}{{b.Bytes(), len(want)}, {gen, len(genWant)}} {
		for _, n := range []int{1, 3, 7} {
			sp, err := SplitFile(bytes.NewReader(c.data), t.TempDir(), n)
			if err != nil || sp.Err != nil {
				t.Fatal(err, sp.Err)
			}
			if sp.Keys != c.want {
				t.Fatalf("%d partitions: %d scopes, want %d", n, sp.Keys, c.want)
			}
		}
	}
}

// A fault aimed at one attempt (a dropped response) goes to that attempt's
// key partition alone, after the first of its kind, which every partition
// gets: the partitions hold the history once, not its faults n times.
func TestSplit_FaultsAimedAtOneAttemptAreNotCopied(t *testing.T) {
	const parts = 8
	data := histgen.Generate(histgen.Default(20000))
	faults := bytes.Count(data, []byte(`"type":"fault"`))
	if faults < 100 {
		t.Fatalf("the generated history has %d faults: the test needs many", faults)
	}
	name := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := SplitFile(bytes.NewReader(data), t.TempDir(), parts)
	if err != nil || sp.Err != nil {
		t.Fatal(err, sp.Err)
	}
	total := 0
	for _, p := range sp.KeyParts {
		b, err := os.ReadFile(p.File)
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(b, []byte("\n"))
	}
	// Each partition beyond the first holds a copy of the meta event and
	// of the first response-drop.
	if want := bytes.Count(data, []byte("\n")) + (parts-1)*2; total != want {
		t.Fatalf("key partitions hold %d lines, want %d (the history's %d faults copied?)", total, want, faults)
	}
	same(t, t.TempDir(), name, parts)
}
