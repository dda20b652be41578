package textsafe

import "testing"

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
