package otlp

import (
	"fmt"
	"strings"

	"github.com/polygraph/polygraph/internal/human"
)

// Stats counts what an exporter did with what it was given: every span
// and log record is sent, dropped or still spooled, and a drop is never
// silent.
type Stats struct {
	// Endpoint is the traces URL.
	Endpoint    string
	Spans, Logs Counts
	// Requests and Retries count the HTTP requests made and those that
	// will be tried again (no answer, 429, 502, 503, 504).
	Requests, Retries int64
	// WireBytes is what the requests' bodies weighed on the wire
	// (compressed); Bytes what they weighed before compression (OTLP
	// protobuf), for the requests the backend took.
	WireBytes, Bytes int64
	// Adopted counts the requests left in the spool by an earlier run
	// that this exporter took over.
	Adopted int
	// SpoolDir is where the undelivered data waits, after Close.
	SpoolDir string
	// Down: the backend did not answer the last attempt.
	Down bool
	// LastError is the last failure, "" if none.
	LastError string
}

// Counts are one signal's items.
type Counts struct {
	// Queued were handed to the exporter (Update, or adopted).
	Queued int64
	// Sent were acknowledged by the backend.
	Sent int64
	// Dropped were given up: the spool was full, the backend refused the
	// request for good or rejected them (partial success), or, with no
	// spool directory, they were undelivered at Close.
	Dropped int64
	// Spooled wait in the spool directory after Close, for the next
	// exporter to send.
	Spooled int64
}

func (s *Stats) counts(sig signal) *Counts {
	if sig == signalLogs {
		return &s.Logs
	}
	return &s.Spans
}

// String says in one line what happened: what was sent where, what
// waits in the spool, and what was dropped (always said, if only as
// "nothing dropped").
func (s Stats) String() string {
	var parts []string
	spooled := s.Spans.Spooled + s.Logs.Spooled
	if s.Spans.Sent > 0 || s.Logs.Sent > 0 || spooled == 0 {
		p := fmt.Sprintf("sent %s and %s to %s (%d requests, %s)", plural(s.Spans.Sent, "span"),
			plural(s.Logs.Sent, "log record"), s.Endpoint, s.Requests, human.Bytes(s.WireBytes))
		if s.Adopted > 0 {
			p += fmt.Sprintf(", with %d requests left by an earlier run", s.Adopted)
		}
		parts = append(parts, p)
	}
	if spooled > 0 {
		why := s.Endpoint + " did not take it all in time"
		if s.Down && s.LastError != "" {
			why = s.Endpoint + " did not answer (" + s.LastError + ")"
		}
		parts = append(parts, fmt.Sprintf("%s: %s and %s wait in %s for the next polygraph with --otlp", why,
			plural(s.Spans.Spooled, "span"), plural(s.Logs.Spooled, "log record"), s.SpoolDir))
	}
	if s.Spans.Dropped > 0 || s.Logs.Dropped > 0 {
		p := fmt.Sprintf("DROPPED %s and %s", plural(s.Spans.Dropped, "span"), plural(s.Logs.Dropped, "log record"))
		if s.LastError != "" {
			p += " (last error: " + s.LastError + ")"
		}
		parts = append(parts, p)
	} else {
		parts = append(parts, "nothing dropped")
	}
	return "otlp: " + strings.Join(parts, "; ")
}

// Delivered reports whether everything queued was sent.
func (s Stats) Delivered() bool {
	return s.Spans.Dropped == 0 && s.Logs.Dropped == 0 && s.Spans.Spooled == 0 && s.Logs.Spooled == 0
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
