package e2e

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/transcript"
)

// attrMarkerRE finds the per-call marker tokens the attribution scenario puts
// into every path and command of a call (pgcall01 …), and the marker of
// activity no call starts (pgrogue).
var attrMarkerRE = regexp.MustCompile(`pgcall\d\d|pgrogue`)

// attrRogue marks what no tool call does: its events must stay unattributed.
const attrRogue = "pgrogue"

// attrMarkerCalls maps each marker to the id of the one tool call that carries
// it in its command, argv or paths.
func attrMarkerCalls(t testing.TB, tr *transcript.Transcript) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tc := range tr.ToolCalls {
		text := tc.Command + " " + strings.Join(tc.Argv, " ") + " " + strings.Join(tc.Paths, " ")
		for _, m := range attrMarkers(text) {
			if prev, ok := out[m]; ok && prev != tc.ID {
				t.Fatalf("marker %s is in two calls: %s and %s", m, prev, tc.ID)
			}
			out[m] = tc.ID
		}
	}
	return out
}

func attrMarkers(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range attrMarkerRE.FindAllString(s, -1) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// attrEventMarkers returns the markers an event carries in its paths or argv.
func attrEventMarkers(e *event.Event, at *correlate.Attribution) []string {
	text := e.Path + " " + e.Path2 + " " + strings.Join(e.Args(), " ")
	return attrMarkers(text)
}

// attrScore is the attribution quality over the marker-carrying events: the
// ground truth is the call whose marker the event carries (none for
// pgrogue).
type attrScore struct {
	Events     int // events carrying exactly one marker
	Expected   int // of them, those whose marker belongs to a call
	Attributed int // events attributed to some call
	Correct    int // events attributed to the call their marker names
	Wrong      []string
}

func (s attrScore) precision() float64 {
	if s.Attributed == 0 {
		return 0
	}
	return 100 * float64(s.Correct) / float64(s.Attributed)
}

func (s attrScore) recall() float64 {
	if s.Expected == 0 {
		return 0
	}
	return 100 * float64(s.Correct) / float64(s.Expected)
}

// attrScoreEvents compares res with the ground truth the markers give.
func attrScoreEvents(t testing.TB, events []*event.Event, res *correlate.Result, calls map[string]string) attrScore {
	t.Helper()
	var s attrScore
	for _, e := range events {
		at := res.Of(e.Seq)
		if at == nil {
			t.Errorf("event %d has no attribution", e.Seq)
			continue
		}
		ms := attrEventMarkers(e, at)
		if len(ms) != 1 {
			continue
		}
		want, known := calls[ms[0]]
		if !known && ms[0] != attrRogue {
			continue // a marker of a call the transcript does not hold
		}
		s.Events++
		if want != "" {
			s.Expected++
		}
		if at.ToolCallID != "" {
			s.Attributed++
		}
		if want != "" && at.ToolCallID == want {
			s.Correct++
			continue
		}
		if at.ToolCallID != want {
			s.Wrong = append(s.Wrong, fmt.Sprintf("seq %d %s pid %d %s %s%s: want %q got %q (%s/%s)",
				e.Seq, e.Kind, e.PID, e.Comm, e.Path, attrArgv(e.Args()), want, at.ToolCallID, at.Reason, at.Detail))
		}
	}
	return s
}

func attrArgv(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	s := strings.Join(argv, " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return " argv=" + s
}

// attrLog logs the process tree as attributed (one line per exec) and the
// counts, for a failing run or one whose directories are kept.
func attrLog(t testing.TB, events []*event.Event, res *correlate.Result) {
	t.Helper()
	for _, e := range events {
		if e.Kind != event.KindExec {
			continue
		}
		at := res.Of(e.Seq)
		t.Logf("exec seq %d pid %d ppid %d %s -> %s %s %s after=%v", e.Seq, e.PID, e.PPID, attrArgv(e.Argv()), at.Reason, at.ToolCallID, at.Detail, at.AfterReturn)
	}
	reasons := make([]string, 0, len(res.Counts))
	for r, n := range res.Counts {
		reasons = append(reasons, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(reasons)
	t.Logf("counts: %s, after-return %d, unattributed listed %d", strings.Join(reasons, " "), res.AfterReturn, len(res.Unattributed))
	details := map[string]int{}
	for _, at := range res.Attributions.All() {
		if at.Reason == correlate.ReasonUnattributed {
			details[at.Detail]++
		}
	}
	t.Logf("unattributed by rule: %v", details)
}
