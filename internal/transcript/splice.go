package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A file can be spliced from two agents' transcripts (by accident, or to
// hide one behind the other). The sniffer picks the format most records
// belong to; the Reader then skips each line that plainly belongs to
// another, with a warning, so its calls are neither misread nor silently
// lost.

// classifySize is how much of a line handle looks at to tell its format:
// the keys that tell formats apart come first in every record.
const classifySize = 4 << 10

// maxForeignWarnings caps the warnings for lines of another format; the
// rest are counted in one more.
const maxForeignWarnings = 10

// foreign skips a line that belongs to another format than the file's (a
// file spliced from two agents' transcripts), with a warning, rather than
// letting the parser misread it or ignore it silently.
func (r *Reader) foreign(f Format) {
	r.foreignN++
	r.foreignLast = r.line
	if r.foreignN <= maxForeignWarnings {
		r.b.warn(r.line, fmt.Sprintf("a %s record in a %s transcript; line skipped", f, r.format))
	}
}

// foreignSummary warns once for the foreign lines past the cap.
func (r *Reader) foreignSummary() {
	if n := r.foreignN - maxForeignWarnings; n > 0 {
		r.b.warn(r.foreignLast, fmt.Sprintf("%d more records of other formats than %s skipped, the last here", n, r.format))
	}
}

// sameFamily reports whether records of format f are read by the parser
// for format of: Claude Code's session files and stream-json share one.
func sameFamily(f, of Format) bool {
	claude := func(x Format) bool { return x == FormatClaudeCode || x == FormatClaudeStream }
	return f == of || claude(f) && claude(of)
}

// topKeys reads the top-level keys of the JSON object data starts with, and
// the values of those that are strings, like scanObject but without a
// json.Decoder: it runs on every line, so it only walks bytes. It stops
// quietly where data is cut short or malformed.
func topKeys(data []byte) keys {
	out := keys{}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return out
	}
	i++
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return out
		}
		end, ok := stringEnd(data, i)
		if !ok {
			return out
		}
		name := unquoteBytes(data[i:end])
		out[name] = ""
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return out
		}
		i = skipSpace(data, i+1)
		if i >= len(data) {
			return out
		}
		switch data[i] {
		case '"':
			if end, ok = stringEnd(data, i); !ok {
				return out
			}
			out[name] = unquoteBytes(data[i:end])
		case '{', '[':
			if end, ok = nestedEnd(data, i); !ok {
				return out
			}
		default:
			end = i
			for end < len(data) && data[end] != ',' && data[end] != '}' {
				end++
			}
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ',' {
			return out
		}
		i++
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at data[i].
func stringEnd(data []byte, i int) (int, bool) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// nestedEnd returns the index just past the object or array at data[i].
func nestedEnd(data []byte, i int) (int, bool) {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			end, ok := stringEnd(data, j)
			if !ok {
				return 0, false
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}

// unquoteBytes is the text of a JSON string literal, quotes included.
func unquoteBytes(q []byte) string {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1])
	}
	var s string
	if json.Unmarshal(q, &s) != nil {
		return ""
	}
	return s
}
