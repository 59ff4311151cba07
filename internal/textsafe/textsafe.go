// Package textsafe makes strings from a recording safe to print on a
// terminal. Paths, argv, process names and transcript text are chosen by
// the traced tree, which can put anything in them: an escape sequence
// that retitles the terminal or rewrites what is on screen, a carriage
// return that hides the start of a line, newlines that print a fake
// "FINDINGS (0)" block above the real one. Every text rendering of such a
// string goes through Line (or Quote); JSON and HTML have their own
// escaping and do not.
//
// The escaping is for reading, not for parsing back: a backslash is left
// as it is, so a name that holds a literal `\n` reads like one that holds
// a newline. What matters is that neither reaches the terminal as
// anything but visible text on its own line; the JSON output has the
// exact bytes.
package textsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line returns s with every byte or rune a terminal could act on written
// out as visible text: C0 controls and DEL as \x1b, \x07 and so on (tab,
// newline and carriage return as \t, \n, \r), C1 controls (which some
// terminals take as escape sequences) as \u009b, the Unicode bidirectional
// overrides and isolates (which reorder what is shown) as \u202e, and
// bytes that are not UTF-8 as \xff. Anything else, spaces and printable
// Unicode included, is kept. s is returned as is when it needs nothing.
func Line(s string) string {
	if !NeedsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Lines is Line of each string.
func Lines(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Line(s)
	}
	return out
}

// NeedsEscape says whether Line would change s.
func NeedsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			// A byte at or above 0x80 may be fine (printable UTF-8);
			// look at the runes from here.
			return c < 0x80 || needsEscapeRunes(s[i:])
		}
	}
	return false
}

func needsEscapeRunes(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || r < 0x20 || r == 0x7f || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports the runes above ASCII a terminal may act on: the C1
// controls, and the bidirectional overrides, embeddings, isolates and
// marks that change the order text is shown in.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
