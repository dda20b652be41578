// Package textsafe decides whether a name read from a user's file (a
// search space, a class directory, an image path) may be printed to a
// terminal as it is: valid UTF-8 without control characters such as NUL,
// ESC or a carriage return, which could rewrite what the terminal shows.
package textsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable reports whether s is valid UTF-8 with no control character
// (unicode.IsControl).
func Printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// Quoted is s when it is Printable, and s as a Go string literal
// (strconv.Quote) otherwise.
func Quoted(s string) string {
	if Printable(s) {
		return s
	}
	return strconv.Quote(s)
}
