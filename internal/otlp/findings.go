package otlp

import (
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/redact"
)

// findingKey identifies a finding across snapshots, whose ids (F1…)
// are renumbered as findings come: its rule, call, first evidence (or
// title, for a finding without evidence) and severity, so one judged
// again at a higher severity is sent again.
func findingKey(f detect.Finding) string {
	k := f.Rule + "|" + f.ToolCallID + "|" + string(f.Severity) + "|"
	if len(f.Evidence) > 0 {
		return k + strconv.FormatUint(f.Evidence[0], 10)
	}
	return k + f.Title
}

// findings sends each finding not sent yet, once its place is known: as
// an event on the span of the call that caused it when that span leaves
// (on the root span, naming the call, when the finding came after the
// call's span left), on the root span when no call caused it; and always
// as a log record carrying the trace and that call's span, for the
// pipelines that read logs.
func (b *builder) findings() {
	root := b.out[b.st.rootID]
	for _, f := range b.a.Findings {
		key := findingKey(f)
		if b.st.found[key] {
			continue
		}
		var host *spanOut
		ctx := b.st.rootID
		after := false
		if f.ToolCallID != "" && b.calls[f.ToolCallID] != nil {
			ctx = b.st.callID(f.ToolCallID)
			host = b.out[ctx]
			if host == nil {
				if _, sent := b.st.sent[ctx]; !sent || root == nil {
					continue // its call's span leaves later
				}
				host, after = root, true
			}
		} else if host = root; host == nil {
			continue // said with the root span, at the end
		}
		b.st.found[key] = true
		at := b.findingTime(f)
		se := host.span.Events().AppendEmpty()
		se.SetName(eventFinding)
		se.SetTimestamp(pcommon.NewTimestampFromTime(at))
		m := se.Attributes()
		findingAttrs(m, f)
		putBool(m, attrFindingAfter, after)

		lr := b.records.AppendEmpty()
		lr.SetEventName(eventFinding)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(at))
		lr.SetSeverityNumber(severityNumber(f.Severity))
		lr.SetSeverityText(strings.ToUpper(string(f.Severity)))
		lr.SetTraceID(b.st.trace)
		lr.SetSpanID(ctx)
		lr.SetFlags(plog.DefaultLogRecordFlags.WithIsSampled(true))
		lr.Body().SetStr(clip(redact.String(f.Title)))
		lm := lr.Attributes()
		findingAttrs(lm, f)
		putID(lm, attrSessionID, b.st.id)
		if tr := b.a.Transcript; tr != nil {
			putStr(lm, attrConversationID, tr.SessionID)
		}
		putStr(lm, attrAgentName, agentName(b.a))
	}
}

// findingAttrs are a finding's attributes, on its span event and its
// log record alike.
func findingAttrs(m pcommon.Map, f detect.Finding) {
	putID(m, attrRuleName, f.Rule)
	putID(m, attrRulesetName, scopeName)
	putID(m, attrFindingID, f.ID)
	putID(m, attrSeverity, string(f.Severity))
	putStr(m, attrTitle, f.Title)
	putStr(m, attrFindDetail, f.Detail)
	putStr(m, attrClaim, f.Claim)
	putID(m, attrToolCallID, f.ToolCallID)
	putBool(m, attrBlocked, f.Blocked)
	if len(f.Evidence) > 0 {
		s := m.PutEmptySlice(attrEvidence)
		s.EnsureCapacity(len(f.Evidence))
		for _, seq := range f.Evidence {
			s.AppendEmpty().SetInt(int64(seq))
		}
	}
	putIDs(m, attrATTACK, f.Frameworks.ATTACK)
	putIDs(m, attrATLAS, f.Frameworks.ATLAS)
	putIDs(m, attrOWASPLLM, f.Frameworks.OWASPLLM)
	putIDs(m, attrSAIF, f.Frameworks.SAIF)
}

// findingTime is when a finding happened: its first evidence event, else
// the end of its call, else the end of the session.
func (b *builder) findingTime(f detect.Finding) time.Time {
	for _, s := range f.Evidence {
		if i := b.seqIndex(s); i >= 0 {
			return b.evs[i].TS
		}
	}
	if tc := b.calls[f.ToolCallID]; tc != nil && !tc.EndedAt.IsZero() {
		return tc.EndedAt
	}
	return b.end
}

// severityNumber maps polygraph's severities onto OpenTelemetry's.
func severityNumber(s detect.Severity) plog.SeverityNumber {
	switch s {
	case detect.SeverityInfo:
		return plog.SeverityNumberInfo
	case detect.SeverityLow:
		return plog.SeverityNumberWarn
	case detect.SeverityMedium:
		return plog.SeverityNumberWarn3
	case detect.SeverityHigh:
		return plog.SeverityNumberError
	case detect.SeverityCritical:
		return plog.SeverityNumberFatal
	}
	return plog.SeverityNumberUnspecified
}

func putIDs(m pcommon.Map, k string, vs []string) {
	if len(vs) == 0 {
		return
	}
	s := m.PutEmptySlice(k)
	s.EnsureCapacity(len(vs))
	for _, v := range vs {
		s.AppendEmpty().SetStr(v)
	}
}

// finish writes each span's effects, appends the spans in order (the
// root last) and records them as sent.
func (b *builder) finish() {
	root := b.st.rootID
	b.spans.EnsureCapacity(len(b.order))
	for _, id := range b.order {
		if id == root {
			continue
		}
		b.emit(id)
	}
	if b.out[root] != nil {
		b.emit(root)
	}
}

func (b *builder) emit(id pcommon.SpanID) {
	o := b.out[id]
	b.writeEffects(o)
	o.span.MoveTo(b.spans.AppendEmpty())
	b.st.sent[id] = b.lastSeq
}
