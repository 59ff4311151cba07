package otlp

import (
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/redact"
)

// sessionID names the session an analysis is of: the recording's id, or
// for a transcript alone the agent's session id.
func sessionID(a *analysis.Analysis) string {
	if a.Meta != nil && a.Meta.ID != "" {
		return a.Meta.ID
	}
	if a.Transcript != nil {
		return a.Transcript.SessionID
	}
	return ""
}

// agentName is the agent the session ran: the transcript's word, else
// the recorded command's program.
func agentName(a *analysis.Analysis) string {
	if a.Transcript != nil && a.Transcript.Agent != "" {
		return a.Transcript.Agent
	}
	if a.Meta != nil && len(a.Meta.Command) > 0 {
		c := a.Meta.Command[0]
		return c[strings.LastIndexByte(c, '/')+1:]
	}
	return "agent"
}

// resource fills the resource every span and log record of a session
// carries: polygraph on the host that recorded it.
func resource(a *analysis.Analysis, version string) func(pcommon.Resource) {
	return func(r pcommon.Resource) {
		m := r.Attributes()
		putID(m, attrServiceName, scopeName)
		putID(m, attrServiceVersion, firstNonEmpty(version, metaVersion(a)))
		putID(m, attrOSType, "linux")
		if a.Meta != nil {
			putStr(m, attrHostName, a.Meta.Hostname)
			putStr(m, attrOSVersion, a.Meta.Kernel)
		}
	}
}

func metaVersion(a *analysis.Analysis) string {
	if a.Meta != nil {
		return a.Meta.Version
	}
	return ""
}

// rootSpan adds the invoke_agent span of the session, sent last, at the
// end: the agent, the conversation, who ran it where, and the totals.
func (b *builder) rootSpan() {
	id := b.st.rootID
	if b.sentOrSending(id) {
		return
	}
	a := b.a
	name := agentName(a)
	o := b.newSpan(id, pcommon.SpanID{}, opInvokeAgent+" "+name, rootGroup, b.start, b.end)
	m := o.span.Attributes()
	putID(m, attrOperation, opInvokeAgent)
	putStr(m, attrAgentName, name)
	putID(m, attrSessionID, b.st.id)
	if tr := a.Transcript; tr != nil {
		putStr(m, attrAgentVersion, tr.Version)
		putStr(m, attrConversationID, tr.SessionID)
		putID(m, attrTranscript, string(tr.Format))
		m.PutInt(attrToolCalls, int64(len(tr.ToolCalls)))
	}
	if meta := a.Meta; meta != nil {
		putID(m, attrSessionMode, meta.Mode)
		putStr(m, attrUserName, meta.User)
		m.PutStr(attrUserID, itoa(meta.UID))
		putStr(m, attrCwd, meta.Cwd)
		putClip(m, attrCmdLine, commandLine(meta.Command))
		putID(m, attrIntegrity, firstNonEmpty(meta.Integrity, "unchecked"))
		m.PutBool(attrCleanClose, meta.CleanClose)
		m.PutInt(attrEventsTotal, int64(len(b.evs)))
		var lost uint64
		for _, n := range meta.Lost {
			lost += n
		}
		m.PutInt(attrEventsLost, int64(lost))
		if meta.ExitCode != nil {
			m.PutInt(attrExitCode, int64(*meta.ExitCode))
			if *meta.ExitCode != 0 {
				o.span.Status().SetCode(ptrace.StatusCodeError)
				o.span.Status().SetMessage("exit " + itoa(*meta.ExitCode))
			}
		}
	}
	if at := a.Attribution; at != nil {
		m.PutInt(attrUnattributed, int64(len(at.Unattributed)))
		putStrs(m, attrAgentExecs, at.AgentExecIDs)
	}
	m.PutInt(attrFindingsCount, int64(len(a.Findings)))
	var maxSev detect.Severity
	for _, f := range a.Findings {
		if f.Severity.Rank() > maxSev.Rank() {
			maxSev = f.Severity
		}
	}
	putID(m, attrMaxSeverity, string(maxSev))
	var ver, mod, unk int64
	for _, r := range a.Verdicts {
		for _, v := range r.Verdicts() {
			switch v.Status {
			case integrity.Verified:
				ver++
			case integrity.Modified:
				mod++
			case integrity.Unknown:
				unk++
			}
		}
	}
	putInt(m, attrExecsVerified, ver)
	putInt(m, attrExecsModified, mod)
	putInt(m, attrExecsUnknown, unk)
	var capped int
	for _, n := range b.ncapped {
		capped += n
	}
	putInt(m, attrSpansCapped, int64(capped))
}

// Attribute helpers. Every free-text string goes through the redactor
// and is capped; ids and enumerations (putID) are the code's own and go
// as they are.

func putStr(m pcommon.Map, k, v string) {
	if v != "" {
		m.PutStr(k, clip(redact.String(v)))
	}
}

// putClip puts a string the redactor has been through already (an argv
// joined after redact.Argv).
func putClip(m pcommon.Map, k, v string) {
	if v != "" {
		m.PutStr(k, clip(v))
	}
}

func putID(m pcommon.Map, k, v string) {
	if v != "" {
		m.PutStr(k, v)
	}
}

func putStrs(m pcommon.Map, k string, vs []string) {
	if len(vs) == 0 {
		return
	}
	s := m.PutEmptySlice(k)
	s.EnsureCapacity(len(vs))
	for _, v := range vs {
		s.AppendEmpty().SetStr(clip(redact.String(v)))
	}
}

// putInt puts a count or amount that is worth saying only when not zero.
func putInt(m pcommon.Map, k string, v int64) {
	if v != 0 {
		m.PutInt(k, v)
	}
}

func putBool(m pcommon.Map, k string, v bool) {
	if v {
		m.PutBool(k, true)
	}
}

// clip cuts s to maxAttr bytes at a character boundary, marking the cut.
func clip(s string) string {
	if len(s) <= maxAttr {
		return s
	}
	n := maxAttr - len("…")
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// redactArgv is the redactor's argv form (flags that take a secret mask
// the next argument).
func redactArgv(argv []string) []string { return redact.Argv(argv) }

func itoa(n int) string { return strconv.Itoa(n) }
