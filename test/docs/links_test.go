package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// root is the repository root, seen from this package.
const root = "../.."

// awaitingMerge are link targets other parts of issue 10 add (the chart, the metrics reference, the release
// notes); the guides link to them already. Once a target exists the test asks for its entry to go.
var awaitingMerge = map[string]bool{}

var (
	linkPattern = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan    = regexp.MustCompile("`[^`]*`")
)

// TestRelativeLinksResolve checks every relative Markdown link in README.md and docs/*.md: the file or folder
// must exist and, for a link into a Markdown file with a #fragment, the heading must exist too.
func TestRelativeLinksResolve(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	checked := 0
	for _, file := range files {
		for _, l := range links(t, file) {
			checked++
			target, fragment, _ := strings.Cut(l.target, "#")
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), target)
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); err != nil {
				if !awaitingMerge[filepath.ToSlash(rel)] {
					t.Errorf("%s:%d: link %q: %s does not exist", l.file, l.line, l.target, rel)
				}
				continue
			}
			if awaitingMerge[filepath.ToSlash(rel)] {
				t.Errorf("%s exists now: remove it from awaitingMerge in test/docs/links_test.go", rel)
			}
			if fragment != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[fragment] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", l.file, l.line, l.target, rel, fragment)
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no relative links at all; is the pattern broken?")
	}
}

type link struct {
	file   string
	line   int
	target string
}

// links returns the relative links of a Markdown file, outside fenced code blocks and code spans.
func links(t *testing.T, file string) []link {
	t.Helper()
	var out []link
	eachLine(t, file, func(n int, line string) {
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, link{file: filepath.Base(file), line: n, target: target})
		}
	})
	return out
}

// anchors returns the anchors GitHub gives the headings of a Markdown file.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	eachLine(t, file, func(_ int, line string) {
		if !strings.HasPrefix(line, "#") {
			return
		}
		a := anchor(strings.TrimLeft(line, "#"))
		for i := 1; out[a]; i++ {
			a = anchor(strings.TrimLeft(line, "#")) + "-" + strconv.Itoa(i)
		}
		out[a] = true
	})
	return out
}

// anchor is GitHub's heading anchor: lower case, punctuation dropped, spaces turned into hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// eachLine calls fn for every line of a Markdown file outside fenced code blocks.
func eachLine(t *testing.T, file string, fn func(n int, line string)) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	fenced := false
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			fn(n, line)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// The anchor rule on the headings the guides link to.
func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		" Pending pods":                       "pending-pods",
		" 2. The first NodePool":              "2-the-first-nodepool",
		" Nodes that never join (`Launched`)": "nodes-that-never-join-launched",
		" IMDSv2: metadataOptions":            "imdsv2-metadataoptions",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}
