package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Tool-use ids tie a call to its result and to what the kernel saw, so the
// parsers must not let one id stand for two calls: a transcript that
// reuses an id (by a bug, or to hide a call behind another) would otherwise
// lose a call without a word. A record introducing a call under an id in use
// keeps its call under "<id>#2" (then #3, ...), which is deterministic, and
// warns with both places; results for the id go to its calls in order.

// differs reports whether two records under one id plainly describe
// different calls: another tool, or another command.
func differs(a, b *ToolCall) bool {
	return a.Tool != "" && b.Tool != "" && a.Tool != b.Tool ||
		a.Command != "" && b.Command != "" && a.Command != b.Command
}

// reuse gives tc, whose id an earlier call (have, nil when already handed
// out) holds, the next free "<id>#n" and warns where tc came from.
func (b *builder) reuse(tc, have *ToolCall) {
	orig := tc.ID
	for n := 2; ; n++ {
		id := fmt.Sprintf("%s#%d", orig, n)
		if b.byID[id] == nil && !b.gone[id] {
			tc.ID = id
			break
		}
	}
	first := "an earlier turn"
	if have != nil && have.Source != "" {
		first = have.Source
	}
	b.t.Warnings = append(b.t.Warnings, Warning{Source: firstNonEmpty(tc.Source, b.src),
		Message: fmt.Sprintf("tool call id %q is already used by the call at %s; this call is kept as %q", orig, first, tc.ID)})
	b.dups[orig] = append(b.dups[orig], tc)
}

// resultCall returns the call a result for id belongs to: the call under
// id, or, where the id was reused, the first of its calls that has had no
// result yet (the last one once all have).
func (b *builder) resultCall(id string) *ToolCall {
	tc := b.call(id)
	if tc == nil {
		return nil
	}
	dups := b.dups[id]
	if len(dups) == 0 {
		b.answered[tc] = true
		return tc
	}
	for _, c := range append([]*ToolCall{tc}, dups...) {
		if !b.answered[c] {
			b.answered[c] = true
			return c
		}
	}
	return dups[len(dups)-1]
}

// renameClash gives sub's call the next "<id>#n" free in byID when t
// already holds a different call under its id, and says so in t's warnings.
func renameClash(t *Transcript, byID map[string]*ToolCall, tc *ToolCall) {
	have := byID[tc.ID]
	orig := tc.ID
	for n := 2; ; n++ {
		id := fmt.Sprintf("%s#%d", orig, n)
		if byID[id] == nil {
			tc.ID = id
			break
		}
	}
	t.Warnings = append(t.Warnings, Warning{Source: tc.Source,
		Message: fmt.Sprintf("tool call id %q is already used by the call at %s; this call is kept as %q", orig, have.Source, tc.ID)})
}

// flexString is a JSON string field that some writers fill with a number
// (a tool-use id of 42, a result of 0): the number's text is taken as the
// string, so the record is not dropped. Objects and arrays are still an
// error.
type flexString string

// UnmarshalJSON accepts a string, a number, a boolean or null.
func (s *flexString) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var v string
		err := json.Unmarshal(data, &v)
		*s = flexString(v)
		return err
	}
	if string(data) == "null" {
		*s = ""
		return nil
	}
	if text, ok := scalarText(data); ok {
		*s = flexString(text)
		return nil
	}
	return fmt.Errorf("want a string or a number, got %s", excerpt(string(data), 40))
}

// scalarText is the text of a JSON number or boolean.
func scalarText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return "", false
	case string(raw) == "true", string(raw) == "false":
		return string(raw), true
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			return n.String(), true
		}
	}
	return "", false
}
