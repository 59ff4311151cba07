package otlp

import (
	"crypto/sha256"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Trace and span ids are derived from what they stand for, never drawn at
// random: the trace from the session id, a tool call's span from its
// transcript id, a process's span from its exec id. A session exported
// twice, live and then again in batch, or after a restart, gets the same
// ids, so a backend can tell a resend from new data, and the live
// exporter can name a parent it sent an update ago (or will send at the
// end) without remembering anything but the session.

// TraceID is the trace id of the session with this id.
func TraceID(sessionID string) pcommon.TraceID {
	h := sha256.Sum256([]byte("polygraph/trace/" + sessionID))
	var id pcommon.TraceID
	copy(id[:], h[:16])
	if id.IsEmpty() {
		id[15] = 1 // all zeroes is "no trace"
	}
	return id
}

// spanID is the span id of what key names in the session.
func spanID(sessionID, key string) pcommon.SpanID {
	h := sha256.Sum256([]byte("polygraph/span/" + sessionID + "/" + key))
	var id pcommon.SpanID
	copy(id[:], h[:8])
	if id.IsEmpty() {
		id[7] = 1
	}
	return id
}

// RootSpanID is the span id of the session's invoke_agent span.
func RootSpanID(sessionID string) pcommon.SpanID { return spanID(sessionID, "root") }

// CallSpanID is the span id of the execute_tool span of the tool call
// with this (transcript) id.
func CallSpanID(sessionID, toolCallID string) pcommon.SpanID {
	return spanID(sessionID, "call/"+toolCallID)
}

// ExecSpanID is the span id of the process span of the image with this
// exec id.
func ExecSpanID(sessionID, execID string) pcommon.SpanID {
	return spanID(sessionID, "exec/"+execID)
}
