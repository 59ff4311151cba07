package otlp

// The names of what the export carries. OpenTelemetry's semantic
// conventions are used where they have a name (GenAI, process, network,
// file, host, security rule); polygraph's own are under polygraph.* and
// each is documented in docs/fleet.md (TestAttributesDocumented checks
// that every name below is there).
const (
	// Resource.
	attrServiceName    = "service.name"
	attrServiceVersion = "service.version"
	attrHostName       = "host.name"
	attrOSType         = "os.type"
	attrOSVersion      = "os.version"

	// GenAI: the agent invocation and its tool calls.
	attrOperation      = "gen_ai.operation.name"
	attrAgentName      = "gen_ai.agent.name"
	attrAgentVersion   = "gen_ai.agent.version"
	attrConversationID = "gen_ai.conversation.id"
	attrToolName       = "gen_ai.tool.name"
	attrToolCallID     = "gen_ai.tool.call.id"
	attrToolType       = "gen_ai.tool.type"
	attrErrorType      = "error.type"

	// Processes.
	attrPID        = "process.pid"
	attrPPID       = "process.parent_pid"
	attrExePath    = "process.executable.path"
	attrExeName    = "process.executable.name"
	attrCmdLine    = "process.command_line"
	attrCwd        = "process.working_directory"
	attrProcUID    = "process.user.id"
	attrExitCode   = "process.exit.code"
	attrUserName   = "user.name"
	attrUserID     = "user.id"
	attrFilePath   = "file.path"
	attrPeerAddr   = "network.peer.address"
	attrPeerPort   = "network.peer.port"
	attrTransport  = "network.transport"
	attrNetType    = "network.type"
	attrServerAddr = "server.address"
	attrDNSName    = "dns.question.name"

	// Findings: the rule is the security rule.
	attrRuleName    = "security_rule.name"
	attrRulesetName = "security_rule.ruleset.name"

	// polygraph's session (root span).
	attrSessionID     = "polygraph.session.id"
	attrSessionMode   = "polygraph.session.mode"
	attrIntegrity     = "polygraph.session.integrity"
	attrCleanClose    = "polygraph.session.clean_close"
	attrEventsTotal   = "polygraph.session.events"
	attrEventsLost    = "polygraph.session.events_lost"
	attrTranscript    = "polygraph.transcript.format"
	attrToolCalls     = "polygraph.session.tool_calls"
	attrFindingsCount = "polygraph.session.findings"
	attrMaxSeverity   = "polygraph.session.max_severity"
	attrUnattributed  = "polygraph.session.unattributed_events"
	attrAgentExecs    = "polygraph.agent.exec_ids"
	attrExecsVerified = "polygraph.integrity.verified"
	attrExecsModified = "polygraph.integrity.modified"
	attrExecsUnknown  = "polygraph.integrity.unknown"
	attrSpansCapped   = "polygraph.spans_capped"

	// A tool call (execute_tool span).
	attrToolKind     = "polygraph.tool.kind"
	attrToolCommand  = "polygraph.tool.command"
	attrToolPaths    = "polygraph.tool.paths"
	attrToolURLs     = "polygraph.tool.urls"
	attrToolExit     = "polygraph.tool.exit_code"
	attrToolIsError  = "polygraph.tool.is_error"
	attrToolRejected = "polygraph.tool.rejected"
	attrToolBg       = "polygraph.tool.background"
	attrToolParent   = "polygraph.tool.parent_id"
	attrToolTimed    = "polygraph.tool.timing"
	attrProcesses    = "polygraph.call.processes"
	attrRunning      = "polygraph.call.processes_running"
	attrCallEvents   = "polygraph.call.events"
	attrCallLate     = "polygraph.call.events_after_return"
	attrCallReads    = "polygraph.call.files_read"
	attrCallWrites   = "polygraph.call.files_written"
	attrCallConnects = "polygraph.call.connects"
	attrCallRootExit = "polygraph.call.root_exit_code"

	// Resources, from exit events (call and process spans).
	attrCPU        = "polygraph.cpu_ns"
	attrMaxRSS     = "polygraph.max_rss_kb"
	attrReadBytes  = "polygraph.io.read_bytes"
	attrWriteBytes = "polygraph.io.write_bytes"

	// Attribution: why a span or event is where it is, and how sure.
	attrReason      = "polygraph.attribution.reason"
	attrDetail      = "polygraph.attribution.detail"
	attrConfidence  = "polygraph.attribution.confidence"
	attrAfterReturn = "polygraph.attribution.after_return"

	// A process (exec span).
	attrExecID       = "polygraph.exec_id"
	attrParentExecID = "polygraph.parent_exec_id"
	attrSignal       = "polygraph.process.signal"
	attrDeleted      = "polygraph.process.deleted"
	attrLeftRunning  = "polygraph.process.running"
	attrScript       = "polygraph.process.script"
	attrSHA256       = "polygraph.integrity.sha256"
	attrVerdict      = "polygraph.integrity.status"
	attrVerdictSrc   = "polygraph.integrity.source"
	attrPackage      = "polygraph.integrity.package"
	attrScriptSHA    = "polygraph.integrity.script_sha256"
	attrScriptVerd   = "polygraph.integrity.script_status"

	// Effects (span events) and their cap.
	attrSeq           = "polygraph.seq"
	attrCount         = "polygraph.count"
	attrAccess        = "polygraph.file.access"
	attrPath2         = "polygraph.file.target"
	attrRequested     = "polygraph.file.requested_path"
	attrPathDiffers   = "polygraph.file.path_differs"
	attrResult        = "polygraph.result"
	attrVia           = "polygraph.via"
	attrBytesSent     = "polygraph.net.bytes_sent"
	attrBytesRecv     = "polygraph.net.bytes_received"
	attrDNSType       = "polygraph.dns.type"
	attrMethod        = "polygraph.call.method"
	attrTargetPID     = "polygraph.call.target_pid"
	attrTargetExe     = "polygraph.call.target_exe"
	attrSigno         = "polygraph.call.signal"
	attrBPFCmd        = "polygraph.call.bpf_cmd"
	attrEffects       = "polygraph.effects"
	attrEffectsCapped = "polygraph.effects_dropped"
	attrRoutine       = "polygraph.effects_routine"

	// A finding (span event and log record).
	attrFindingID    = "polygraph.finding.id"
	attrSeverity     = "polygraph.finding.severity"
	attrTitle        = "polygraph.finding.title"
	attrFindDetail   = "polygraph.finding.detail"
	attrClaim        = "polygraph.finding.claim"
	attrBlocked      = "polygraph.finding.blocked"
	attrEvidence     = "polygraph.finding.evidence"
	attrATTACK       = "polygraph.finding.attack"
	attrATLAS        = "polygraph.finding.atlas"
	attrOWASPLLM     = "polygraph.finding.owasp_llm"
	attrSAIF         = "polygraph.finding.saif"
	attrFindingAfter = "polygraph.finding.after_span"
)

// Span and event names.
const (
	opInvokeAgent = "invoke_agent"
	opExecuteTool = "execute_tool"
	eventFinding  = "polygraph.finding"
	scopeName     = "polygraph"
)

// attributeNames lists every name above, for the documentation test.
var attributeNames = []string{
	attrServiceName, attrServiceVersion, attrHostName, attrOSType, attrOSVersion,
	attrOperation, attrAgentName, attrAgentVersion, attrConversationID, attrToolName, attrToolCallID, attrToolType, attrErrorType,
	attrPID, attrPPID, attrExePath, attrExeName, attrCmdLine, attrCwd, attrProcUID, attrExitCode, attrUserName, attrUserID,
	attrFilePath, attrPeerAddr, attrPeerPort, attrTransport, attrNetType, attrServerAddr, attrDNSName,
	attrRuleName, attrRulesetName,
	attrSessionID, attrSessionMode, attrIntegrity, attrCleanClose, attrEventsTotal, attrEventsLost, attrTranscript,
	attrToolCalls, attrFindingsCount, attrMaxSeverity, attrUnattributed, attrAgentExecs, attrExecsVerified,
	attrExecsModified, attrExecsUnknown, attrSpansCapped,
	attrToolKind, attrToolCommand, attrToolPaths, attrToolURLs, attrToolExit, attrToolIsError, attrToolRejected, attrToolBg,
	attrToolParent, attrToolTimed, attrProcesses, attrRunning, attrCallEvents, attrCallLate, attrCallReads, attrCallWrites,
	attrCallConnects, attrCallRootExit,
	attrCPU, attrMaxRSS, attrReadBytes, attrWriteBytes,
	attrReason, attrDetail, attrConfidence, attrAfterReturn,
	attrExecID, attrParentExecID, attrSignal, attrDeleted, attrLeftRunning, attrScript, attrSHA256, attrVerdict,
	attrVerdictSrc, attrPackage, attrScriptSHA, attrScriptVerd,
	attrSeq, attrCount, attrAccess, attrPath2, attrRequested, attrPathDiffers, attrResult, attrVia, attrBytesSent,
	attrBytesRecv, attrDNSType, attrMethod, attrTargetPID, attrTargetExe, attrSigno, attrBPFCmd, attrEffects, attrEffectsCapped, attrRoutine,
	attrFindingID, attrSeverity, attrTitle, attrFindDetail, attrClaim, attrBlocked, attrEvidence, attrATTACK, attrATLAS,
	attrOWASPLLM, attrSAIF, attrFindingAfter,
}
