// Package textsafe decides whether a name read from a user's file (a
// search space, a class directory, an image path) may be printed to a
// terminal as it is: valid UTF-8 without control characters such as NUL,
// ESC or a carriage return, which could rewrite what the terminal shows,
// and without the Unicode bidirectional controls, which reorder what is
// shown after them (a class "cat\u202Egnp.exe" prints as "catexe.png").
package textsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable reports whether s is valid UTF-8 with no control character
// (unicode.IsControl) and no bidirectional control (IsBidiControl).
func Printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || IsBidiControl(r) })
}

// IsBidiControl reports whether r is one of Unicode's explicit
// bidirectional formatting characters (Unicode Standard Annex #9,
// table 4, and Unicode's Bidi_Control property): the marks U+061C (ALM),
// U+200E (LRM) and U+200F (RLM), the embeddings and overrides
// U+202A … U+202E, and the isolates U+2066 … U+2069.
func IsBidiControl(r rune) bool {
	return unicode.Is(unicode.Bidi_Control, r)
}

// Quoted is s when it is Printable, and s as a Go string literal
// (strconv.Quote, which escapes control and bidirectional characters as
// it escapes every character strconv.IsPrint refuses) otherwise.
func Quoted(s string) string {
	if Printable(s) {
		return s
	}
	return strconv.Quote(s)
}
