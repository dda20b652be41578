package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/yuin/goldmark/ast"
)

// slugger gives headings the anchors GitHub gives them (github-slugger):
// the heading's text lower-cased, every character that is not a letter, a
// mark, a digit, "-", "_" or a space dropped, each space a "-", and a
// repeated anchor suffixed "-1", "-2", … in document order. The report's
// contents link to them, on GitHub and in report.html alike.
type slugger struct {
	seen map[string]int
}

func newSlugger() *slugger { return &slugger{seen: map[string]int{}} }

// next is the anchor of the next heading whose markdown text is text.
func (s *slugger) next(text string) string {
	base := headingSlug(text)
	slug := base
	for {
		if _, ok := s.seen[slug]; !ok {
			break
		}
		s.seen[base]++
		slug = fmt.Sprintf("%s-%d", base, s.seen[base])
	}
	s.seen[slug] = 0
	return slug
}

// headingSlug is a heading's anchor before repeats are told apart.
func headingSlug(text string) string {
	text = strings.ToLower(headingText(text))
	var b strings.Builder
	for _, r := range text {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingText is a heading's text as rendered: its markdown's code and
// emphasis marks dropped.
func headingText(md string) string {
	return strings.NewReplacer("`", "", "*", "").Replace(strings.TrimSpace(md))
}

// headingIDs is goldmark's parser.IDs for the report: every heading's id
// is its slugger anchor.
type headingIDs struct{ slugs *slugger }

func (h *headingIDs) Generate(value []byte, kind ast.NodeKind) []byte {
	return []byte(h.slugs.next(string(value)))
}

func (h *headingIDs) Put(value []byte) { h.slugs.seen[string(value)] = 0 }

// heading is one heading of the report: its level and markdown text.
type heading struct {
	level int
	text  string
}

var headingLine = regexp.MustCompile(`^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$`)

// headings are md's ATX headings in order, outside fenced code.
func headings(md []byte) []heading {
	var out []heading
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~") {
			fenced = !fenced
			continue
		}
		if m := headingLine.FindStringSubmatch(l); m != nil && !fenced {
			out = append(out, heading{len(m[1]), m[2]})
		}
	}
	return out
}

// contentsTitle is the heading of the report's contents.
const contentsTitle = "Contents"

// withContents is head, the contents of the whole report (a link to
// every heading below the title, nested by level), then rest.
func withContents(head, rest []byte) []byte {
	all := append(headings(head), heading{2, contentsTitle})
	all = append(all, headings(rest)...)
	slugs := newSlugger()
	var toc strings.Builder
	fmt.Fprintf(&toc, "## %s\n\n", contentsTitle)
	for _, h := range all {
		slug := slugs.next(h.text)
		if h.level < 2 || h.text == contentsTitle {
			continue
		}
		text := strings.NewReplacer("[", `\[`, "]", `\]`).Replace(h.text)
		fmt.Fprintf(&toc, "%s- [%s](#%s)\n", strings.Repeat("  ", h.level-2), text, slug)
	}
	toc.WriteString("\n")
	out := append([]byte(nil), head...)
	out = append(out, toc.String()...)
	return append(out, rest...)
}
