package report

import (
	"slices"
	"strings"
	"unicode"
)

// Signature is what makes two violations the same failure for the HTML
// report: the same scenario (name and file), mutant, step and invariant,
// the same likely cause, and the same explanation once the violation's own
// names (tenant, key, intent, method, path) and every number or id (a run
// of letters, digits, '-' and '_' that holds a digit: ops, statuses, times,
// generated ids) are blanked out. A seed sweep against one bug gives one
// signature for hundreds of runs. A different checker rule or wording, or another invariant, gives another.
func Signature(run Run, step int, invariant string, v Violation) string {
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
func shape(v Violation) string {
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
	word := func(r rune) bool { return r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	var b strings.Builder
	for len(e) > 0 {
		i := strings.IndexFunc(e, word)
		if i < 0 {
			b.WriteString(e)
			break
		}
		b.WriteString(e[:i])
		e = e[i:]
		j := strings.IndexFunc(e, func(r rune) bool { return !word(r) })
		if j < 0 {
			j = len(e)
		}
		if w := e[:j]; strings.ContainsAny(w, "0123456789") {
			b.WriteByte('#')
		} else {
			b.WriteString(w)
		}
		e = e[j:]
	}
	return b.String()
}
