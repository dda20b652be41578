package textsafe

import (
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	for s, want := range map[string]bool{
		"":             true,
		"lr":           true,
		"chiffres-été": true,
		"a\x1b[2J":     false, // ESC: clears the screen
		"a\rb":         false,
		"nul\x00":      false,
		"\xff":         false, // invalid UTF-8
		"tab\tx":       false,
		"\u0085":       false, // NEL, a C1 control
	} {
		if got := Printable(s); got != want {
			t.Errorf("Printable(%q) = %v, want %v", s, got, want)
		}
	}
	if got, want := Quoted("a\x1bb"), `"a\x1bb"`; got != want {
		t.Errorf("Quoted = %s, want %s", got, want)
	}
	if got := Quoted("plain"); got != "plain" {
		t.Errorf("Quoted(plain) = %s", got)
	}
}

// The twelve characters of Unicode's Bidi_Control property are refused
// (a right-to-left override makes "cat\u202Egnp.exe" show as "catexe.png")
// and escaped by Quoted; neighbouring format characters are not refused.
func TestBidiControls(t *testing.T) {
	bidi := []rune{0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}
	n := 0
	for r := rune(0); r <= 0x10FFFF; r++ {
		if IsBidiControl(r) {
			n++
		}
	}
	if n != len(bidi) {
		t.Errorf("%d bidirectional controls, want the %d of UAX #9", n, len(bidi))
	}
	for _, r := range bidi {
		s := "cat" + string(r) + "gnp.exe"
		if !IsBidiControl(r) || Printable(s) {
			t.Errorf("U+%04X: bidi control %v, %q printable", r, IsBidiControl(r), s)
		}
		if q := Quoted(s); q == s || !strings.HasPrefix(q, `"cat\u`) {
			t.Errorf("Quoted(%q) = %s", s, q)
		}
	}
	for _, r := range []rune{0x200D, 0x2060, 0x2065 - 1} { // ZWJ, word joiner, invisible plus: not bidi controls
		if IsBidiControl(r) {
			t.Errorf("U+%04X counted as a bidi control", r)
		}
	}
}
