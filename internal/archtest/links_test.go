package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestDocs_RelativeLinksResolve keeps the front door and the pages behind it
// joined up: every relative link in README.md, the other top-level pages and
// docs/*.md names a file or folder that exists, and every #anchor names a
// heading of its target. Pages move and headings get renamed as the docs
// grow; a reader who lands on a dead link stops reading.
func TestDocs_RelativeLinksResolve(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, docs...)
	if !slices.Contains(pages, filepath.Join(root, "README.md")) || len(docs) == 0 {
		t.Fatalf("found %v: want README.md and docs/*.md", pages)
	}
	links := 0
	for _, page := range pages {
		n, problems := checkLinks(page)
		links += n
		for _, p := range problems {
			rel, _ := filepath.Rel(root, page)
			t.Errorf("%s: %s", rel, p)
		}
	}
	if links == 0 {
		t.Error("no relative link found in any page: the link scanner is broken")
	}
}

// TestREADME_FrontDoor keeps README.md the front door it was cut to be: at
// most 400 lines (every topic past the first real use is a page under
// docs/), with the two commands a newcomer runs, the test command being
// exactly what .ci/run executes.
func TestREADME_FrontDoor(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 400 {
		t.Errorf("README.md has %d lines; at most 400: move a topic to a page under docs/ and link it", n)
	}
	_, two, _ := strings.Cut(string(readme), "## The two commands\n")
	_, block, _ := strings.Cut(two, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var commands []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		commands = append(commands, strings.TrimSpace(cmd))
	}
	want := []string{"go build -o idemchaos ./cmd/idemchaos && ./idemchaos demo", "./test.sh"}
	if !slices.Equal(commands, want) {
		t.Errorf("README.md's two commands are %q, want %q", commands, want)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ci)), "\n")
	if last := lines[len(lines)-1]; last != "exec ./test.sh" {
		t.Errorf(".ci/run ends with %q, want it to run exactly the README's test command: exec ./test.sh", last)
	}
}

// TestCheckLinks_FindsBrokenOnes proves the checker can fail: a link to a
// missing file, a missing heading of another page, a missing heading of the
// page itself, and an anchor into a file that has no headings, against
// links that resolve (including ones inside code, which are not links).
func TestCheckLinks_FindsBrokenOnes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("docs/other.md", "# Other page\n\n## From an OpenAPI file: `idemchaos init`\n\n## Twice\n\n## Twice\n")
	write("data.yaml", "a: 1\n")
	page := write("README.md", strings.Join([]string{
		"# Title",
		"## The history format (JSONL, version 1)",
		"ok: [a](docs/other.md) [b](docs/other.md#from-an-openapi-file-idemchaos-init) [c](docs/other.md#twice-1)",
		"ok: [d](#the-history-format-jsonl-version-1) [e](data.yaml) [f](docs/) [g](https://example.com/x#y) ![h](docs/other.md)",
		"ok: `[not a link](nowhere.md)`",
		"```",
		"[not a link either](nowhere.md)",
		"```",
		"bad: [1](missing.md) [2](docs/other.md#no-such-heading) [3](#no-such-heading) [4](data.yaml#a)",
		"[5]: docs/gone.md",
	}, "\n\n"))
	n, problems := checkLinks(page)
	want := []string{
		`link "missing.md": no such file`,
		`link "docs/other.md#no-such-heading": no heading "no-such-heading" in docs/other.md`,
		`link "#no-such-heading": no heading "no-such-heading" in README.md`,
		`link "data.yaml#a": an anchor into data.yaml, which is not a Markdown page`,
		`link "docs/gone.md": no such file`,
	}
	if !slices.Equal(problems, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if n != 12 {
		t.Errorf("checked %d relative links, want 12", n)
	}
}

var (
	// inlineLink is [text](target) or ![alt](target), with an optional
	// "title" after the target.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^()\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink is a reference definition: [name]: target.
	refLink = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s.*)?$`)
	// codeSpan is inline code, where brackets are not links.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// scheme marks an absolute URL (https:, mailto:), not checked here.
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// htmlAnchor is an explicit anchor a page may carry besides its headings.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// checkLinks returns how many relative links page holds and a problem for
// each one that does not resolve.
func checkLinks(page string) (int, []string) {
	text, err := os.ReadFile(page)
	if err != nil {
		return 0, []string{err.Error()}
	}
	// Inline code draws brackets literally: blank it too.
	prose := codeSpan.ReplaceAllString(stripFences(string(text)), "code")
	var targets []string
	for _, m := range inlineLink.FindAllStringSubmatch(prose, -1) {
		targets = append(targets, m[1])
	}
	for _, m := range refLink.FindAllStringSubmatch(prose, -1) {
		targets = append(targets, m[1])
	}
	var problems []string
	n := 0
	for _, target := range targets {
		if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
			continue
		}
		n++
		if p := resolve(page, target); p != "" {
			problems = append(problems, fmt.Sprintf("link %q: %s", target, p))
		}
	}
	return n, problems
}

// resolve says why target, a link on page, does not resolve ("" when it does).
func resolve(page, target string) string {
	path, anchor, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
		if _, err := os.Stat(file); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	name := filepath.Base(file)
	if path != "" {
		name = path
	}
	if !strings.HasSuffix(file, ".md") {
		return fmt.Sprintf("an anchor into %s, which is not a Markdown page", name)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if !slices.Contains(anchors(string(text)), anchor) {
		return fmt.Sprintf("no heading %q in %s", anchor, name)
	}
	return ""
}

// stripFences blanks fenced code blocks, keeping the line count, so that
// neither links nor headings are read inside them.
func stripFences(text string) string {
	var b strings.Builder
	fence := ""
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			b.WriteString("\n")
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			b.WriteString("\n")
		default:
			b.WriteString(line)
		}
	}
	return b.String()
}

// anchors lists the fragment ids a Markdown page offers: its headings
// slugged as GitHub slugs them (a repeated heading gets -1, -2, …) and any
// explicit <a id> or <a name>.
func anchors(text string) []string {
	var ids []string
	seen := map[string]int{}
	for _, line := range strings.Split(stripFences(text), "\n") {
		if m := htmlAnchor.FindAllStringSubmatch(line, -1); m != nil {
			for _, a := range m {
				ids = append(ids, a[1])
			}
		}
		heading, ok := headingText(line)
		if !ok {
			continue
		}
		slug := githubSlug(heading)
		if k := seen[slug]; k > 0 {
			ids = append(ids, fmt.Sprintf("%s-%d", slug, k))
		} else {
			ids = append(ids, slug)
		}
		seen[slug]++
	}
	return ids
}

// headingText is the text of an ATX heading line ("## Text").
func headingText(line string) (string, bool) {
	line = strings.TrimRight(line, " \r")
	hashes := len(line) - len(strings.TrimLeft(line, "#"))
	if hashes == 0 || hashes > 6 || (len(line) > hashes && line[hashes] != ' ') {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(line[hashes:], "#")), true
}

// mdLinkText keeps a link's text and drops its target, as the rendered
// heading does.
var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// githubSlug is GitHub's fragment for a heading: the rendered text in lower
// case, with every character but letters, digits, spaces, '-' and '_'
// dropped and each space made a '-'.
func githubSlug(heading string) string {
	heading = mdLinkText.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
