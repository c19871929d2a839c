package htmlpage

import (
	"slices"
	"strings"

	"github.com/idemchaos/idemchaos/report"
)

// Signature is what makes two violations the same failure for the HTML
// report: the same scenario (name and file), mutant, step and invariant,
// the same likely cause, and the same explanation once the violation's own
// names (tenant, key, intent, method, path) and every number or id (a run
// of letters, digits, '-' and '_' that holds a digit: ops, statuses, times,
// generated ids) are blanked out. A seed sweep against one bug gives one
// signature for hundreds of runs; another checker rule or wording, or
// another invariant, gives another.
func Signature(run report.Run, step int, invariant string, v report.Violation) string {
	var b strings.Builder
	stepName := ""
	if step >= 0 && step < len(run.Steps) {
		stepName = run.Steps[step].Name
	}
	for _, s := range []string{run.Scenario, run.File, run.Mutant, stepName, invariant, v.Cause} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	b.WriteString(shape(v))
	return b.String()
}

// shape is v's explanation with the names and numbers blanked out.
func shape(v report.Violation) string {
	e := v.Explanation
	// Longest first, so that a key holding the tenant's name is blanked
	// as a whole.
	names := []string{v.Key, v.Intent, v.Tenant, v.Path, v.Method}
	slices.SortStableFunc(names, func(a, b string) int { return len(b) - len(a) })
	for _, n := range names {
		if len(n) > 1 {
			e = strings.ReplaceAll(e, n, "‹›")
		}
	}
	// Byte by byte: every byte of a multi-byte rune counts as a letter.
	word := func(c byte) bool {
		return c == '-' || c == '_' || c >= 0x80 || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
	}
	b := make([]byte, 0, len(e))
	for i := 0; i < len(e); {
		if !word(e[i]) {
			b = append(b, e[i])
			i++
			continue
		}
		j, digit := i, false
		for ; j < len(e) && word(e[j]); j++ {
			digit = digit || ('0' <= e[j] && e[j] <= '9')
		}
		if digit {
			b = append(b, '#')
		} else {
			b = append(b, e[i:j]...)
		}
		i = j
	}
	return string(b)
}
