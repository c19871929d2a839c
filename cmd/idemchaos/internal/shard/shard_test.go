package shard

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Spec{"1/1": {1, 1}, "2/4": {2, 4}, " 4/4 ": {4, 4}} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0/4", "5/4", "1/0", "a/4", "2", "-1/4", "1/10001"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q): no error", in)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	cases := []struct {
		env  []string
		want Spec
	}{
		{[]string{"JOB_COMPLETION_INDEX", "0", "IDEMCHAOS_SHARD_TOTAL", "4"}, Spec{1, 4}}, // 0-based
		{[]string{"JOB_COMPLETION_INDEX", "3", "IDEMCHAOS_SHARD_TOTAL", "4"}, Spec{4, 4}},
		{[]string{"CI_NODE_INDEX", "1", "CI_NODE_TOTAL", "3"}, Spec{1, 3}}, // 1-based
		{[]string{"CIRCLE_NODE_INDEX", "2", "CIRCLE_NODE_TOTAL", "3"}, Spec{3, 3}},
	}
	for _, c := range cases {
		got, err := FromEnv(env(c.env...))
		if err != nil || got != c.want {
			t.Errorf("FromEnv(%v) = %v, %v; want %v", c.env, got, err, c.want)
		}
	}
	for _, bad := range [][]string{
		nil,
		{"JOB_COMPLETION_INDEX", "0"}, // no total
		{"JOB_COMPLETION_INDEX", "4", "IDEMCHAOS_SHARD_TOTAL", "4"}, // past the end
		{"CI_NODE_INDEX", "0", "CI_NODE_TOTAL", "3"},                // GitLab counts from 1
		{"CI_NODE_INDEX", "x", "CI_NODE_TOTAL", "3"},
	} {
		if got, err := FromEnv(env(bad...)); err == nil {
			t.Errorf("FromEnv(%v) = %v, want an error", bad, got)
		}
	}
}

func TestParseSeeds(t *testing.T) {
	t.Parallel()
	got, err := ParseSeeds("5-7, 1,6,-2")
	if want := []int64{-2, 1, 5, 6, 7}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseSeeds = %v, %v; want %v", got, err, want)
	}
	if s := FormatSeeds(got); s != "-2,1,5-7" {
		t.Errorf("FormatSeeds = %q", s)
	}
	big, err := ParseSeeds("1-10000")
	if err != nil || len(big) != 10000 || FormatSeeds(big) != "1-10000" {
		t.Errorf("1-10000: %d seeds, %v, %q", len(big), err, FormatSeeds(big))
	}
	for _, bad := range []string{"", "3-1", "a", "1-", "1,,2", "1-2000000"} {
		if _, err := ParseSeeds(bad); err == nil || !strings.Contains(err.Error(), "--seeds") {
			t.Errorf("ParseSeeds(%q): %v, want an error naming --seeds", bad, err)
		}
	}
}

// Every pair lands in exactly one shard, whatever the counts, and the
// shards differ in size by at most one.
func TestOf_Partition(t *testing.T) {
	t.Parallel()
	seeds, _ := ParseSeeds("1-37")
	for _, scen := range []int{1, 3} {
		all := Pairs(scen, seeds)
		for total := 1; total <= 9; total++ {
			seen := map[Pair]int{}
			sizes := []int{}
			for i := 1; i <= total; i++ {
				mine := Of(all, Spec{i, total})
				sizes = append(sizes, len(mine))
				for _, p := range mine {
					seen[p]++
				}
			}
			if len(seen) != len(all) {
				t.Fatalf("%d scenarios, %d shards: %d distinct pairs run, want %d", scen, total, len(seen), len(all))
			}
			for p, n := range seen {
				if n != 1 {
					t.Fatalf("%d shards: pair %v run %d times", total, p, n)
				}
			}
			if slices.Max(sizes)-slices.Min(sizes) > 1 {
				t.Errorf("%d shards: uneven sizes %v", total, sizes)
			}
		}
	}
}
