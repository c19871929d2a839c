package scenarios

import (
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// expandKeys are the values in which ${VAR} is replaced from the
// environment: the addresses that are only known where the scenario runs
// (a CI job's database, a port picked at start-up). Nowhere else: a body
// or a hook command with a literal "${" must stay as written. A consumer
// scenario's consumer.command and consumer.env values are expanded too:
// the consumer's binary and its database are as local as a DSN.
var expandKeys = []string{"/target/url", "/effects/dsn", "/effects/url"}

// expandPaths are expandKeys and the consumer's command and env values.
func (t *tree) expandPaths() []string {
	out := append([]string(nil), expandKeys...)
	if v, ok := t.get("/consumer/command"); ok {
		if list, ok := v.([]any); ok {
			for i := range list {
				out = append(out, "/consumer/command/"+strconv.Itoa(i))
			}
		}
	}
	if v, ok := t.get("/consumer/env"); ok {
		if m, ok := v.(map[string]any); ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				out = append(out, ptr("/consumer/env", k))
			}
		}
	}
	return out
}

// envRef matches ${NAME} and ${NAME:-default}, the shell's forms.
var envRef = regexp.MustCompile(`\$\{([^}:]*)(:-([^}]*))?\}`)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expandEnv replaces ${NAME} (and ${NAME:-default}, the default applying
// when NAME is unset or empty) in the values of [expandKeys]. A variable
// that is unset and has no default is an error at the value's position:
// an empty DSN or URL would fail later, and less clearly.
func (t *tree) expandEnv() {
	for _, p := range t.expandPaths() {
		s, ok := t.str(p)
		if !ok || !strings.Contains(s, "${") {
			continue
		}
		out := envRef.ReplaceAllStringFunc(s, func(ref string) string {
			m := envRef.FindStringSubmatch(ref)
			name, hasDefault, def := m[1], m[2] != "", m[3]
			if !envName.MatchString(name) {
				t.errorf(t.posOf(p), "%s: %q is not an environment variable reference (want ${NAME} or ${NAME:-default})", t.where(p), ref)
				return ref
			}
			v, set := os.LookupEnv(name)
			if t.env == nil {
				t.env = map[string]string{}
			}
			t.env[name] = v // "" when unset: the default applies again
			if set && v != "" {
				return v
			}
			if !hasDefault {
				t.errorf(t.posOf(p), "%s: environment variable %s is not set (or write ${%s:-default})", t.where(p), name, name)
				return ref
			}
			return def
		})
		parent, _ := t.get(p[:strings.LastIndexByte(p, '/')])
		last := p[strings.LastIndexByte(p, '/')+1:]
		switch c := parent.(type) {
		case map[string]any:
			if k := splitPtr(p); len(k) > 0 {
				c[k[len(k)-1]] = out
			}
		case []any:
			if i, err := strconv.Atoi(last); err == nil && i < len(c) {
				c[i] = out
			}
		}
	}
}
