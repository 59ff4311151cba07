package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OpenTelemetry GenAI spans, as OTLP JSON (what the collector's file exporter
// and OTLP/HTTP JSON write: {"resourceSpans": [...]} per line or per
// document) or as the Python SDK's ConsoleSpanExporter prints them (one
// pretty-printed span object after another). A tool call is an execute_tool
// span (gen_ai.operation.name = "execute_tool") with gen_ai.tool.name,
// gen_ai.tool.call.id, gen_ai.tool.call.arguments and gen_ai.tool.call.result;
// the assistant's words come from gen_ai.output.messages on model spans.
// Spans arrive children first and traces interleave, so calls come out at the
// end of the input.

type otelSpan struct {
	traceID, spanID, parentID string
	name                      string
	start, end                time.Time
	attrs                     map[string]any
	isError                   bool
	statusMsg                 string
	service                   string
	line                      int
	texts                     []string // assistant output text found on the span or its events
}

type otelParser struct {
	spans []*otelSpan
}

// otelAttrKeep is every attribute the parser reads; others are dropped as
// spans are read so prompts and message histories do not pile up.
var otelAttrKeep = map[string]bool{
	"gen_ai.operation.name": true, "gen_ai.tool.name": true, "gen_ai.tool.call.id": true,
	"gen_ai.tool.call.arguments": true, "gen_ai.tool.call.result": true, "gen_ai.agent.name": true,
	"gen_ai.agent.id": true, "gen_ai.conversation.id": true, "error.type": true, "process.exit.code": true,
	"gen_ai.usage.input_tokens": true, "gen_ai.usage.output_tokens": true,
}

func (p *otelParser) parse(b *builder, lc *lineCounter) error {
	br := bufio.NewReader(lc)
	var buf []byte
	line, start := 0, 0
	for {
		raw, err := br.ReadBytes('\n')
		if len(raw) > 0 {
			line++
			t := bytes.TrimSpace(raw)
			if len(buf) == 0 {
				start = line
				if len(t) == 0 {
					goto next
				}
			}
			buf = append(buf, raw...)
			// A value is complete when its last line closes it: a one-line
			// record, or a pretty-printed one whose closing brace sits at
			// column 0.
			if line == start || raw[0] == '}' || raw[0] == ']' {
				if json.Valid(buf) {
					p.value(b, start, buf)
					buf = buf[:0]
				} else if line == start && t[0] == '{' && t[len(t)-1] == '}' || t[0] == ']' {
					b.warn(start, "not valid JSON; skipped")
					buf = buf[:0]
				}
			}
			if len(buf) > b.opts.maxLine() {
				b.warn(start, "record too long; skipped")
				buf = nil
			}
		}
	next:
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
	}
	if len(bytes.TrimSpace(buf)) > 0 {
		b.warn(start, "incomplete last record (the file is still being written?)")
	}
	p.emit(b)
	return nil
}

// value reads one top-level JSON value: an OTLP request, a console span, or
// an array of either.
func (p *otelParser) value(b *builder, line int, raw []byte) {
	raw = bytes.TrimSpace(raw)
	raw = bytes.TrimSuffix(raw, []byte(","))
	if len(raw) > 0 && raw[0] == '[' {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			b.warn(line, "unreadable array")
			return
		}
		for _, it := range items {
			p.value(b, line, it)
		}
		return
	}
	var probe struct {
		ResourceSpans json.RawMessage `json:"resourceSpans"`
		Context       json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		b.warn(line, "unreadable record: "+shortErr(err))
		return
	}
	switch {
	case len(probe.ResourceSpans) > 0:
		p.otlp(b, line, probe.ResourceSpans)
	case len(probe.Context) > 0:
		p.console(b, line, raw)
	}
	// Metrics and logs exports carry no spans.
}

type otlpAttr struct {
	Key   string        `json:"key"`
	Value otlpAttrValue `json:"value"`
}

type otlpAttrValue struct {
	StringValue *string         `json:"stringValue"`
	IntValue    json.RawMessage `json:"intValue"`
	BoolValue   *bool           `json:"boolValue"`
	DoubleValue *float64        `json:"doubleValue"`
	ArrayValue  *struct {
		Values []otlpAttrValue `json:"values"`
	} `json:"arrayValue"`
}

func (v otlpAttrValue) value() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case len(v.IntValue) > 0:
		if n, err := strconv.ParseInt(strings.Trim(string(v.IntValue), `"`), 10, 64); err == nil {
			return n
		}
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.DoubleValue != nil:
		return *v.DoubleValue
	case v.ArrayValue != nil:
		out := make([]any, len(v.ArrayValue.Values))
		for i, e := range v.ArrayValue.Values {
			out[i] = e.value()
		}
		return out
	}
	return nil
}

func otlpAttrs(list []otlpAttr, all bool) map[string]any {
	m := map[string]any{}
	for _, a := range list {
		if all || otelAttrKeep[a.Key] || a.Key == "gen_ai.output.messages" || a.Key == "gen_ai.completion" || strings.HasPrefix(a.Key, "gen_ai.completion.") {
			m[a.Key] = a.Value.value()
		}
	}
	return m
}

func (p *otelParser) otlp(b *builder, line int, raw json.RawMessage) {
	type otlpEvent struct {
		Name       string     `json:"name"`
		Attributes []otlpAttr `json:"attributes"`
	}
	type otlpSpan struct {
		TraceID      string          `json:"traceId"`
		SpanID       string          `json:"spanId"`
		ParentSpanID string          `json:"parentSpanId"`
		Name         string          `json:"name"`
		Start        json.RawMessage `json:"startTimeUnixNano"`
		End          json.RawMessage `json:"endTimeUnixNano"`
		Attributes   []otlpAttr      `json:"attributes"`
		Events       []otlpEvent     `json:"events"`
		Status       struct {
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		} `json:"status"`
	}
	type scope struct {
		Spans []otlpSpan `json:"spans"`
	}
	var rs []struct {
		Resource struct {
			Attributes []otlpAttr `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []scope `json:"scopeSpans"`
		ILSpans    []scope `json:"instrumentationLibrarySpans"`
	}
	if err := json.Unmarshal(raw, &rs); err != nil {
		b.warn(line, "unreadable resourceSpans: "+shortErr(err))
		return
	}
	for _, r := range rs {
		res := otlpAttrs(r.Resource.Attributes, true)
		service, _ := res["service.name"].(string)
		for _, sc := range append(r.ScopeSpans, r.ILSpans...) {
			for _, s := range sc.Spans {
				code := strings.Trim(string(s.Status.Code), `"`)
				sp := &otelSpan{traceID: s.TraceID, spanID: s.SpanID, parentID: s.ParentSpanID, name: s.Name,
					start: unixNano(s.Start), end: unixNano(s.End), attrs: otlpAttrs(s.Attributes, false),
					isError: code == "2" || code == "STATUS_CODE_ERROR", statusMsg: s.Status.Message, service: service, line: line}
				for _, ev := range s.Events {
					sp.texts = append(sp.texts, outputTexts(otlpAttrs(ev.Attributes, false))...)
				}
				p.add(sp)
			}
		}
	}
}

func (p *otelParser) console(b *builder, line int, raw json.RawMessage) {
	var s struct {
		Name    string `json:"name"`
		Context struct {
			TraceID string `json:"trace_id"`
			SpanID  string `json:"span_id"`
		} `json:"context"`
		ParentID   *string        `json:"parent_id"`
		Start      string         `json:"start_time"`
		End        string         `json:"end_time"`
		Attributes map[string]any `json:"attributes"`
		Status     struct {
			Code        string `json:"status_code"`
			Description string `json:"description"`
		} `json:"status"`
		Events []struct {
			Attributes map[string]any `json:"attributes"`
		} `json:"events"`
		Resource struct {
			Attributes map[string]any `json:"attributes"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		b.warn(line, "unreadable span: "+shortErr(err))
		return
	}
	service, _ := s.Resource.Attributes["service.name"].(string)
	sp := &otelSpan{traceID: s.Context.TraceID, spanID: s.Context.SpanID, name: s.Name,
		start: parseTime(s.Start), end: parseTime(s.End), attrs: map[string]any{},
		isError: s.Status.Code == "ERROR", statusMsg: s.Status.Description, service: service, line: line}
	if s.ParentID != nil {
		sp.parentID = *s.ParentID
	}
	for k, v := range s.Attributes {
		if otelAttrKeep[k] || k == "gen_ai.output.messages" || k == "gen_ai.completion" || strings.HasPrefix(k, "gen_ai.completion.") {
			sp.attrs[k] = v
		}
	}
	for _, ev := range s.Events {
		sp.texts = append(sp.texts, outputTexts(ev.Attributes)...)
	}
	p.add(sp)
}

func (p *otelParser) add(sp *otelSpan) {
	sp.texts = append(sp.texts, outputTexts(sp.attrs)...)
	delete(sp.attrs, "gen_ai.output.messages")
	p.spans = append(p.spans, sp)
}

// outputTexts finds assistant text in gen_ai.output.messages (a JSON string
// or structure of [{role, parts: [{type: text, content}]}]) or in the older
// gen_ai.completion attributes.
func outputTexts(attrs map[string]any) []string {
	var out []string
	if v, ok := attrs["gen_ai.output.messages"]; ok {
		var msgs []struct {
			Role  string `json:"role"`
			Parts []struct {
				Type    string `json:"type"`
				Content any    `json:"content"`
			} `json:"parts"`
		}
		var raw []byte
		if s, ok := v.(string); ok {
			raw = []byte(s)
		} else {
			raw, _ = json.Marshal(v)
		}
		if json.Unmarshal(raw, &msgs) == nil {
			for _, m := range msgs {
				if m.Role != "" && m.Role != "assistant" {
					continue
				}
				for _, part := range m.Parts {
					if s, ok := part.Content.(string); ok && part.Type == "text" {
						out = append(out, s)
					}
				}
			}
		}
	}
	if s, ok := attrs["gen_ai.completion"].(string); ok {
		out = append(out, s)
	}
	for i := 0; ; i++ {
		s, ok := attrs["gen_ai.completion."+strconv.Itoa(i)+".content"].(string)
		if !ok {
			break
		}
		if role, _ := attrs["gen_ai.completion."+strconv.Itoa(i)+".role"].(string); role == "" || role == "assistant" {
			out = append(out, s)
		}
	}
	return out
}

func unixNano(raw json.RawMessage) time.Time {
	s := strings.Trim(string(raw), `"`)
	if s == "" || s == "0" {
		return time.Time{}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func (sp *otelSpan) str(k string) string {
	switch v := sp.attrs[k].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		enc, _ := json.Marshal(v)
		return string(enc)
	}
}

func (sp *otelSpan) op() string {
	if op := sp.str("gen_ai.operation.name"); op != "" {
		return op
	}
	if strings.HasPrefix(sp.name, "execute_tool") {
		return "execute_tool"
	}
	return ""
}

// emit turns the spans into calls and claims, one trace per turn, each in
// time order.
func (p *otelParser) emit(b *builder) {
	byID := map[string]*otelSpan{}
	traceStart := map[string]time.Time{}
	for _, sp := range p.spans {
		byID[sp.traceID+"/"+sp.spanID] = sp
		if ts, ok := traceStart[sp.traceID]; !ok || sp.start.Before(ts) {
			traceStart[sp.traceID] = sp.start
		}
	}
	callID := func(sp *otelSpan) string {
		return firstNonEmpty(sp.str("gen_ai.tool.call.id"), sp.spanID)
	}
	// The agent a span runs for: its own gen_ai.agent.name, or its nearest
	// ancestor's; a tool span under another tool span belongs to a subagent.
	ancestor := func(sp *otelSpan, match func(*otelSpan) bool) *otelSpan {
		for i, cur := 0, byID[sp.traceID+"/"+sp.parentID]; cur != nil && i < 256; i, cur = i+1, byID[cur.traceID+"/"+cur.parentID] {
			if match(cur) {
				return cur
			}
		}
		return nil
	}
	// A call happens when its span starts; words are said when theirs ends.
	type item struct {
		sp   *otelSpan
		at   time.Time
		text bool
	}
	var items []item
	for _, sp := range p.spans {
		items = append(items, item{sp: sp, at: sp.start})
		if len(sp.texts) > 0 {
			items = append(items, item{sp: sp, at: sp.end, text: true})
		}
	}
	slices.SortStableFunc(items, func(a, c item) int {
		if a.sp.traceID != c.sp.traceID {
			return traceStart[a.sp.traceID].Compare(traceStart[c.sp.traceID])
		}
		return a.at.Compare(c.at)
	})
	trace := ""
	for _, it := range items {
		sp := it.sp
		if sp.traceID != trace {
			b.endTurn()
			trace = sp.traceID
		}
		b.seen(sp.start)
		b.seen(sp.end)
		if sid := sp.str("gen_ai.conversation.id"); sid != "" && b.t.SessionID == "" {
			b.t.SessionID = sid
		}
		agent := sp.str("gen_ai.agent.name")
		if agent == "" {
			if a := ancestor(sp, func(s *otelSpan) bool { return s.str("gen_ai.agent.name") != "" }); a != nil {
				agent = a.str("gen_ai.agent.name")
			}
		}
		if b.t.Agent == "" {
			b.t.Agent = firstNonEmpty(agent, sp.service)
		}
		parent := ""
		if a := ancestor(sp, func(s *otelSpan) bool { return s.op() == "execute_tool" }); a != nil {
			parent = callID(a)
		}
		if it.text {
			for _, text := range sp.texts {
				b.say(sp.line, sp.end, text, parent)
			}
			continue
		}
		if sp.op() == "execute_tool" {
			b.add(otelCall(b, sp, callID(sp), firstNonEmpty(agent, sp.service), parent))
		}
	}
}

// otelCall is the call an execute_tool span describes.
func otelCall(b *builder, sp *otelSpan, id, agent, parent string) *ToolCall {
	name := sp.str("gen_ai.tool.name")
	if name == "" {
		name = strings.TrimSpace(strings.TrimPrefix(sp.name, "execute_tool"))
	}
	tc := &ToolCall{ID: id, Agent: agent, Tool: name, StartedAt: sp.start, EndedAt: sp.end,
		ParentID: parent, SessionID: sp.str("gen_ai.conversation.id"), Source: b.where(sp.line)}
	genericCall(tc, decodeArgs(json.RawMessage(strconvQuoteIfString(sp.attrs["gen_ai.tool.call.arguments"]))))
	result := sp.str("gen_ai.tool.call.result")
	if result == "" && sp.isError {
		result = sp.statusMsg
	}
	b.result(tc, result)
	tc.IsError = sp.isError || sp.str("error.type") != ""
	if n, ok := jsonNumber(sp.attrs["process.exit.code"]); ok {
		tc.ExitCode = intPtr(int(n))
	} else if v, ok := sp.attrs["process.exit.code"].(int64); ok {
		tc.ExitCode = intPtr(int(v))
	} else if tc.Kind == KindShell {
		tc.ExitCode = firstInt(matchInt(reExitCode, result), matchInt(reProcessExited, result))
	}
	return tc
}

// strconvQuoteIfString gives the JSON for an attribute value: a string holding
// JSON is returned as is, anything else is encoded.
func strconvQuoteIfString(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	if v == nil {
		return nil
	}
	enc, _ := json.Marshal(v)
	return enc
}
