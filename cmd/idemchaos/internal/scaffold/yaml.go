package scaffold

import (
	"encoding/json"
	"regexp"
	"strings"
)

// yamlText builds YAML text with comments; the scenario loader parses it
// back, which is how the tests know every line is what it should be.
type yamlText struct{ b strings.Builder }

// line writes one line at indent (in two-space steps) with an optional
// trailing comment.
func (y *yamlText) line(indent int, text, comment string) {
	y.b.WriteString(strings.Repeat("  ", indent))
	y.b.WriteString(text)
	if comment != "" {
		y.b.WriteString("  # ")
		y.b.WriteString(oneLine(comment))
	}
	y.b.WriteByte('\n')
}

// comment writes text as comment lines at indent, wrapped near 80 columns.
func (y *yamlText) comment(indent int, text string) {
	pad := strings.Repeat("  ", indent) + "# "
	for _, para := range strings.Split(text, "\n") {
		if strings.TrimSpace(para) == "" {
			y.b.WriteString(strings.TrimRight(pad, " ") + "\n")
			continue
		}
		// Lines that start with spaces are kept as they are (examples).
		if strings.HasPrefix(para, " ") {
			y.b.WriteString(pad + para + "\n")
			continue
		}
		cur := ""
		for _, w := range strings.Fields(para) {
			if cur != "" && len(pad)+len(cur)+1+len(w) > 80 {
				y.b.WriteString(pad + cur + "\n")
				cur = ""
			}
			if cur != "" {
				cur += " "
			}
			cur += w
		}
		if cur != "" {
			y.b.WriteString(pad + cur + "\n")
		}
	}
}

func (y *yamlText) blank() { y.b.WriteByte('\n') }

// step opens an item of a scenario's steps: why it is there, as a
// comment, then its name.
func (y *yamlText) step(name, why string) {
	y.comment(1, why)
	y.line(1, "- name: "+name, "")
}

func (y *yamlText) String() string { return y.b.String() }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var plainSafe = regexp.MustCompile(`^[A-Za-z0-9_./][A-Za-z0-9_./ :-]*$`)

// str renders s as a YAML scalar: plain when that cannot be misread, else
// JSON-quoted (a JSON string is a valid YAML double-quoted scalar).
func str(s string) string {
	if plainSafe.MatchString(s) && !strings.Contains(s, ": ") && !strings.HasSuffix(s, ":") &&
		!strings.HasSuffix(s, " ") && !isYAMLSpecial(s) {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func isYAMLSpecial(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n":
		return true
	}
	if s == "" {
		return true
	}
	c := s[0]
	return c >= '0' && c <= '9' || c == '.'
}

// singleQuoted renders s in YAML's single-quoted style, where only ' needs
// escaping: the most readable form for a JSON body.
func singleQuoted(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
