package shard

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/report"
)

// shardReports builds the reports of a run of scenarios × seeds split in
// total shards; verdict gives each pair's verdict.
func shardReports(scen []string, seeds string, total int, verdict func(string, int64) string) []report.Report {
	ss, _ := ParseSeeds(seeds)
	all := Pairs(len(scen), ss)
	var out []report.Report
	for i := 1; i <= total; i++ {
		var runs []report.Run
		mine := Of(all, Spec{Index: i, Total: total})
		for _, p := range mine {
			v := verdict(scen[p.Scenario], p.Seed)
			runs = append(runs, report.Run{Scenario: scen[p.Scenario], Seed: p.Seed, Verdict: v, Met: v == "pass"})
		}
		r := report.New(runs)
		r.Shard = &report.Shard{Index: i, Total: total, Scenarios: scen, Seeds: seeds, Pairs: len(mine)}
		out = append(out, r)
	}
	return out
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "shard-" + string(rune('a'+i)) + ".json"
	}
	return out
}

func TestMerge_Whole(t *testing.T) {
	t.Parallel()
	scen := []string{"a", "b"}
	cases := []struct {
		verdict func(string, int64) string
		want    string
		code    int
	}{
		{func(string, int64) string { return "pass" }, "pass", 0},
		{func(s string, seed int64) string {
			if s == "b" && seed == 7 {
				return "violation"
			}
			return "pass"
		}, "violation", 1},
		{func(s string, seed int64) string {
			if seed == 3 {
				return "unknown"
			}
			return "pass"
		}, "unknown", 2},
		// A run that found the environment broken outranks a violation
		// elsewhere: the merge is exit 3, as one process would have been.
		{func(s string, seed int64) string {
			switch {
			case s == "a" && seed == 2:
				return "environment-error"
			case seed == 5:
				return "violation"
			}
			return "pass"
		}, "environment-error", 3},
	}
	for _, c := range cases {
		reps := shardReports(scen, "1-10", 4, c.verdict)
		got, err := Merge(reps, names(4))
		if err != nil {
			t.Fatal(err)
		}
		if got.Verdict != c.want || got.ExitCode != c.code || len(got.Runs) != 20 {
			t.Errorf("merged: verdict %s exit %d runs %d; want %s %d 20", got.Verdict, got.ExitCode, len(got.Runs), c.want, c.code)
		}
		// The runs come in the unsharded order: scenarios as given, seeds ascending.
		for i, r := range got.Runs {
			if r.Scenario != scen[i/10] || r.Seed != int64(i%10+1) {
				t.Fatalf("run %d is %s seed %d", i, r.Scenario, r.Seed)
			}
		}
		if got.Shard != nil || len(got.Merged) != 4 {
			t.Errorf("merged report: shard %v, merged %v", got.Shard, got.Merged)
		}
	}
}

func TestMerge_Incomplete(t *testing.T) {
	t.Parallel()
	pass := func(string, int64) string { return "pass" }
	fresh := func() []report.Report { return shardReports([]string{"a", "b"}, "1-10", 4, pass) }
	cases := map[string]struct {
		mangle func([]report.Report) []report.Report
		want   string
	}{
		"missing":    {func(r []report.Report) []report.Report { return append(r[:1], r[2:]...) }, "shard 2/4 missing"},
		"twice":      {func(r []report.Report) []report.Report { r[1] = r[0]; return r }, "given twice"},
		"cut short":  {func(r []report.Report) []report.Report { r[2].Runs = r[2].Runs[:3]; return r }, "ran 3 of its 5 pairs"},
		"wrong pair": {func(r []report.Report) []report.Report { r[3].Runs[0].Seed = 99; return r }, "want a seed 4"},
		"other run":  {func(r []report.Report) []report.Report { r[1].Shard.Seeds = "1-11"; return r }, "of another run"},
		"not shard":  {func(r []report.Report) []report.Report { r[0].Shard = nil; return r }, "not a shard report"},
		"errored":    {func(r []report.Report) []report.Report { r[0].ExitCode, r[0].Error = 3, "--junit x: denied"; return r }, "ended in error"},
		// run stops a sweep at its first environment error: the merge
		// names that, not a shard that was merely cut short.
		"environment stop": {func(r []report.Report) []report.Report {
			r[2].Runs = r[2].Runs[:1]
			r[2].Runs[0].Verdict = "environment-error"
			r[2].Runs[0].Steps = []report.Step{{Verdict: "environment-error", Reason: "the harness's database died"}}
			r[2].Verdict, r[2].ExitCode = "environment-error", 3
			return r
		}, "stopped at an environment error after 1 of its 5 pairs: the harness's database died"},
	}
	for name, c := range cases {
		reps := c.mangle(fresh())
		_, err := Merge(reps, names(len(reps)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}
