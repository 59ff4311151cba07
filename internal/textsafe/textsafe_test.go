package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"/home/dev/.ssh/id_ed25519", "/home/dev/.ssh/id_ed25519"},
		{"naïve café ✓", "naïve café ✓"},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"x\nFINDINGS (0)\n  none\n", `x\nFINDINGS (0)\n  none\n`},
		{"a\tb\rc", `a\tb\rc`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"bidi\u202eexe.txt", `bidi\u202eexe.txt`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{`literal \n stays`, `literal \n stays`},
	}
	for _, tt := range tests {
		if got := Line(tt.in); got != tt.want {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if NeedsEscape(tt.in) != (tt.in != tt.want) {
			t.Errorf("NeedsEscape(%q) = %v", tt.in, NeedsEscape(tt.in))
		}
	}
}

// FuzzLine: whatever goes in, what comes out is valid UTF-8 with nothing
// a terminal acts on, and a string that needs no escaping comes back as
// it was.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J\x07", "x\nFINDINGS (0)\n", "\u202e\u0085", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Line(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Line(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || unsafeRune(r) {
				t.Fatalf("Line(%q) = %q keeps %U", s, got, r)
			}
		}
		if !NeedsEscape(s) && got != s {
			t.Fatalf("Line(%q) = %q, though it needs no escaping", s, got)
		}
		if NeedsEscape(s) && !strings.Contains(got, `\`) {
			t.Fatalf("Line(%q) = %q escapes nothing", s, got)
		}
	})
}
