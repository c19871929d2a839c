package partcheck

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// Source identifies the history file a check read: the merge of the
// shares of several machines refuses shares cut from different bytes.
type Source struct {
	// Name is the path as the check was given it (machines may differ).
	Name string `json:"name"`
	Size int64  `json:"size"`
	// SHA256 is the hex SHA-256 of the file, as sha256sum prints it; set
	// only for one machine's share (Options.Only).
	SHA256 string `json:"sha256,omitempty"`
}

// Partial is what a check of some partitions of a history found, before
// the merge: each checker's result on each partition, with the counts
// behind it ([checkers.MarshalPartial]). Its JSON form travels in the
// report of check --partition i/N --json to idemchaos merge.
type Partial struct {
	// Index is the partition checked (Options.Only), -1 for every one;
	// Total is the partition count N.
	Index int `json:"index"`
	Total int `json:"total"`
	// Source is the history file; Invariants the checks, in the order
	// asked; Settings the contract and budget they judged by: shares that
	// differ in any of them do not make one check.
	Source     Source   `json:"source"`
	Invariants []string `json:"invariants"`
	Settings   string   `json:"settings"`
	// Contract is the contract the verdict rules read (which statuses
	// are decisions); Settings holds it too, for the comparison.
	Contract checkers.Contract `json:"contract"`
	// Events, Truncated and Interrupted are the whole history's, as the
	// split counted them.
	Events      int    `json:"events"`
	Truncated   bool   `json:"truncated,omitempty"`
	Interrupted string `json:"interrupted,omitempty"`
	// Checked lists the key partitions checked.
	Checked []int `json:"checked"`
	// KeySequences are, for a client run's history, the keys of each
	// intent of these partitions that changed key, in the order sent.
	KeySequences map[string][]string `json:"key_sequences,omitempty"`

	meta    history.Event
	results []partResult
	// facts are the verdict rules' facts of the key partitions checked,
	// added up ([checkers.Facts.Add]).
	facts checkers.Facts
}

// partResult is one checker's result over one unit of partitions at the
// end of one step, encoded by [checkers.MarshalPartial] until the merge.
type partResult struct {
	name string
	step int
	enc  []byte
}

// wireResult is one result in the JSON form of a Partial: encoded by
// [checkers.MarshalPartial] (base64 in JSON). The meta event travels as
// the history line it was, so that it comes back as the reader reads it.
type wireResult struct {
	Invariant string `json:"invariant"`
	Step      int    `json:"step,omitempty"`
	Partial   []byte `json:"partial"`
}

// MarshalJSON encodes the partial for another machine's [Merge].
func (p *Partial) MarshalJSON() ([]byte, error) {
	type plain Partial // drops the methods: no recursion
	w := struct {
		*plain
		Meta    string         `json:"meta"`
		Results []wireResult   `json:"results"`
		Facts   checkers.Facts `json:"facts"`
	}{plain: (*plain)(p), Meta: string(history.AppendEvent(nil, &p.meta)), Results: []wireResult{}, Facts: p.facts}
	for _, r := range p.results {
		w.Results = append(w.Results, wireResult{r.name, r.step, r.enc})
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON encoded.
func (p *Partial) UnmarshalJSON(b []byte) error {
	type plain Partial
	w := struct {
		*plain
		Meta    string         `json:"meta"`
		Results []wireResult   `json:"results"`
		Facts   checkers.Facts `json:"facts"`
	}{plain: (*plain)(p)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	p.facts = w.Facts
	if w.Meta != "" {
		if err := history.NewReader(strings.NewReader(w.Meta)).Next(&p.meta); err != nil {
			return fmt.Errorf("partition meta event: %w", err)
		}
	}
	p.results = p.results[:0]
	for _, r := range w.Results {
		// Decoded here to refuse a damaged report now, not at the merge.
		if _, err := checkers.UnmarshalPartial(r.Partial); err != nil {
			return fmt.Errorf("partition result %s: %w", r.Invariant, err)
		}
		if r.Step < 0 || r.Step >= maxSteps {
			return fmt.Errorf("partition result %s: step %d (want 0 to %d)", r.Invariant, r.Step, maxSteps-1)
		}
		p.results = append(p.results, partResult{r.Invariant, r.Step, r.Partial})
	}
	return nil
}

// Result is the merged result of this share alone: the whole history's
// when it covers every partition, else that of its partitions (counts and
// violations of its keys only).
func (p *Partial) Result() (*Summary, checkers.Judgement, error) { return merge([]*Partial{p}) }

// Meta is the history's meta event.
func (p *Partial) Meta() history.Event { return p.meta }

// settingsOf says what, besides the history, decides the results: shares
// judged by different contracts or budgets must not be merged.
func settingsOf(o Options) (string, error) {
	c, err := json.Marshal(o.Contract)
	if err != nil {
		return "", fmt.Errorf("contract: %w", err)
	}
	return fmt.Sprintf("contract=%s max-time=%s", c, o.MaxTime), nil
}

// maxListed is how many missing partitions an error names.
const maxListed = 10

// maxSteps bounds the step a partition's result names: the merge holds a
// result per step, and a crafted "step": 99999999999 would ask for them all.
const maxSteps = 100_000

// Merge joins the shares of N machines (check --partition i/N of one
// history) into the result one check of the whole history gives. Every
// partition must be there exactly once, cut from the same file (size and
// hash) into the same N, checked by the same invariants and settings;
// anything else is an error, never a partial verdict.
func Merge(parts []*Partial) (*Summary, checkers.Judgement, error) {
	var zero checkers.Judgement
	if len(parts) == 0 {
		return nil, zero, fmt.Errorf("merge: no partitions")
	}
	parts = slices.Clone(parts)
	slices.SortStableFunc(parts, func(a, b *Partial) int { return a.Index - b.Index })
	first := parts[0]
	seen := map[int]bool{}
	for _, p := range parts {
		if p.Index < 0 {
			return nil, zero, fmt.Errorf("merge: %s was checked whole, not as one partition of several", p.Source.Name)
		}
		if p.Total != first.Total {
			return nil, zero, fmt.Errorf("merge: partition %d/%d and partition %d/%d cut the history into different counts", first.Index, first.Total, p.Index, p.Total)
		}
		if p.Index >= p.Total {
			return nil, zero, fmt.Errorf("merge: partition %d/%d out of range", p.Index, p.Total)
		}
		if p.Source.Size != first.Source.Size || p.Source.SHA256 != first.Source.SHA256 || p.Source.SHA256 == "" {
			return nil, zero, fmt.Errorf("merge: partition %d/%d is of another file (%s, %d bytes, sha256 %s) than partition %d/%d (%s, %d bytes, sha256 %s)",
				p.Index, p.Total, p.Source.Name, p.Source.Size, p.Source.SHA256, first.Index, first.Total, first.Source.Name, first.Source.Size, first.Source.SHA256)
		}
		if !slices.Equal(p.Invariants, first.Invariants) || p.Settings != first.Settings {
			return nil, zero, fmt.Errorf("merge: partition %d/%d was checked with other invariants or contract (%s; %s) than partition %d/%d (%s; %s)",
				p.Index, p.Total, strings.Join(p.Invariants, ","), p.Settings, first.Index, first.Total, strings.Join(first.Invariants, ","), first.Settings)
		}
		if seen[p.Index] {
			return nil, zero, fmt.Errorf("merge: partition %d/%d given twice", p.Index, p.Total)
		}
		seen[p.Index] = true
	}
	// Listed up to a few: a crafted total of 99999999999 must not build
	// a list of every partition it lacks.
	var missing []string
	for i := 0; i < first.Total && len(missing) <= maxListed; i++ {
		if !seen[i] {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Total))
		}
	}
	if len(missing) > maxListed {
		missing = append(missing[:maxListed], fmt.Sprintf("… (%d missing in all)", first.Total-len(parts)))
	}
	if len(missing) > 0 {
		return nil, zero, fmt.Errorf("merge: partition %s of %s missing: the check is incomplete, no verdict", strings.Join(missing, ", "), first.Source.Name)
	}
	return merge(parts)
}
