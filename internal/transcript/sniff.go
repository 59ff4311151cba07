package transcript

import (
	"bytes"
	"encoding/json"
)

// sniffSize is how much of the input the sniffer looks at. Records can be
// long (a Codex session_meta carries the whole system prompt), but the keys
// that tell formats apart come first in every record.
const sniffSize = 1 << 20

// Sniff names the format of a transcript from its first bytes, or returns ""
// when none matches. It looks at content only, never at a file name.
func Sniff(prefix []byte) Format {
	prefix = bytes.TrimPrefix(prefix, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(prefix, " \t\r\n")
	if len(trimmed) == 0 {
		return ""
	}
	switch trimmed[0] {
	case '[':
		// Gemini's logs.json: an array of {sessionId, messageId, type, message, timestamp}.
		// An OTLP exporter may also write an array of requests or console spans.
		first := scanArrayFirst(trimmed)
		switch {
		case first.has("sessionId") && first.has("messageId"):
			return FormatGeminiLogs
		case first.has("resourceSpans"), isConsoleSpan(first):
			return FormatOTel
		}
		return ""
	case '{':
	default:
		return ""
	}
	// The first value as a whole document, however it is laid out over lines.
	doc := scanObject(trimmed)
	switch {
	case doc.has("resourceSpans"), isConsoleSpan(doc):
		return FormatOTel
	case doc.has("messages") && (doc.has("sessionId") || doc.has("projectHash")):
		return FormatGeminiJSON
	case sniffMini(doc, trimmed):
		return FormatMini
	}
	// Otherwise one record per line: the format most of the first records
	// that say what they are belong to (the earliest on a tie), so one
	// record of another agent spliced in front does not decide.
	votes := map[Format]int{}
	var first []Format
	lines := 0
	for len(prefix) > 0 && lines < 64 {
		var line []byte
		if i := bytes.IndexByte(prefix, '\n'); i >= 0 {
			line, prefix = prefix[:i], prefix[i+1:]
		} else {
			line, prefix = prefix, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		lines++
		if f := classify(scanObject(line)); f != "" {
			if votes[f] == 0 {
				first = append(first, f)
			}
			votes[f]++
		}
	}
	best := Format("")
	for _, f := range first {
		if votes[f] > votes[best] {
			best = f
		}
	}
	return best
}

// classify names the format one JSONL record belongs to, or "" when the
// record alone does not tell.
func classify(k keys) Format {
	typ := k.str("type")
	switch {
	case k.has("resourceSpans"):
		return FormatOTel
	case k.has("payload") && oneOf(typ, "session_meta", "response_item", "event_msg", "turn_context", "compacted"):
		return FormatCodex
	case k.has("record_type"):
		return FormatCodex // pre-0.3 rollouts: {"record_type":"state"}
	case k.has("$set"), k.has("$rewindTo"):
		return FormatGeminiJSONL
	case k.has("sessionId") && k.has("projectHash"):
		return FormatGeminiJSONL
	case k.has("session_id") && oneOf(typ, "system", "assistant", "user", "result", "stream_event"):
		return FormatClaudeStream
	case oneOf(typ, "user", "assistant", "summary", "system", "progress", "file-history-snapshot", "queue-operation", "attachment", "custom-title", "tag") &&
		(k.has("uuid") || k.has("leafUuid") || k.has("sessionId") || k.has("messageId") || k.has("parentUuid")):
		return FormatClaudeCode
	case oneOf(typ, "gemini", "user", "info", "error", "warning") && k.has("id") && k.has("timestamp") && k.has("content"):
		return FormatGeminiJSONL // a Gemini message record
	case oneOf(typ, "session", "tool_call", "tool_result", "claim"):
		return FormatJSONL
	case typ == "message" && k.has("text") && !k.has("content"):
		return FormatJSONL
	case oneOf(typ, "message", "function_call", "function_call_output", "local_shell_call", "reasoning", "custom_tool_call", "custom_tool_call_output", "web_search_call"):
		return FormatCodex // pre-0.3 rollouts: bare response items
	}
	return ""
}

func isConsoleSpan(k keys) bool {
	return k.has("name") && k.has("context") && k.has("attributes") && (k.has("start_time") || k.has("parent_id"))
}

func oneOf(s string, vals ...string) bool {
	for _, v := range vals {
		if s == v {
			return true
		}
	}
	return false
}

// keys holds the top-level keys of one JSON object and the values of those
// that are strings.
type keys map[string]string

func (k keys) has(name string) bool   { _, ok := k[name]; return ok }
func (k keys) str(name string) string { return k[name] }

// scanObject reads the top-level keys of the JSON object data starts with,
// skipping nested values, and stops quietly where data is cut short.
func scanObject(data []byte) keys {
	dec := json.NewDecoder(bytes.NewReader(data))
	return scanDecoder(dec)
}

func scanDecoder(dec *json.Decoder) keys {
	out := keys{}
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return out
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		name, ok := tok.(string)
		if !ok {
			return out
		}
		tok, err = dec.Token()
		if err != nil {
			out[name] = ""
			return out
		}
		switch v := tok.(type) {
		case json.Delim:
			out[name] = ""
			if err := skipNested(dec); err != nil {
				return out
			}
		case string:
			out[name] = v
		default:
			out[name] = ""
		}
	}
	return out
}

// skipNested consumes tokens until the object or array just opened closes.
func skipNested(dec *json.Decoder) error {
	depth := 1
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
	}
	return nil
}

// scanArrayFirst reads the keys of the first element of a JSON array.
func scanArrayFirst(data []byte) keys {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') || !dec.More() {
		return keys{}
	}
	return scanDecoder(dec)
}
