package detect

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

func init() {
	register(&Rule{
		ID:         "events-lost",
		Scope:      ScopeSession,
		Summary:    "the recording lost events (ring buffer, tracking, queue or store): the kernel's account is incomplete",
		Severity:   SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1562.006"}},
		check:      eventsLost,
	})
}

// stageUndecodable counts records that reached polygraph but could not be
// decoded: they are counted where they were found, one by one, so the
// loss is bounded and no flood can cause it; every other stage drops
// events without knowing what they were.
const stageUndecodable = "undecodable"

// stageRing and stageSecRing are the sensor's two rings: the main one
// (ordinary file operations) and the security ring (process tree,
// network, calls, opens of sensitive files). A session recorded before
// the security ring existed has no stageSecRing entry.
const (
	stageRing    = "ringbuf"
	stageSecRing = "ringbuf-security"
)

// ordinaryOnly reports whether everything lost was in the main ring (or
// undecodable) while the session had a security ring that lost nothing:
// what is missing are ordinary file operations, never an exec, a connect
// or a sensitive open.
func ordinaryOnly(lost map[string]uint64) bool {
	if n, ok := lost[stageSecRing]; !ok || n != 0 {
		return false
	}
	for st, n := range lost {
		if n > 0 && st != stageRing && st != stageUndecodable {
			return false
		}
	}
	return true
}

// eventsLost is the events-lost rule: one finding per session that lost
// anything. None of the loss counters knows what it dropped, so a ring
// buffer, tracking, queue or store loss may hide an exec, a connect or a
// sensitive open (and a tracking loss a whole process): high. Loss only
// of undecodable records is medium, and so is loss only in the main ring
// of a session whose security ring lost nothing (ordinaryOnly).
func eventsLost(s *run) []Finding {
	lost := s.in.Meta.Lost
	var total uint64
	var parts []string
	sev := SeverityMedium
	stages := slices.SortedFunc(maps.Keys(lost), func(a, b string) int {
		return cmp.Or(cmp.Compare(lost[b], lost[a]), cmp.Compare(a, b))
	})
	for _, st := range stages {
		n := lost[st]
		if n == 0 {
			continue
		}
		total += n
		parts = append(parts, fmt.Sprintf("%s %d", st, n))
		if st != stageUndecodable {
			sev = s.rule.Severity
		}
	}
	if total == 0 {
		return nil
	}
	what := "Records the decoder could not read were skipped; what they were is unknown."
	switch {
	case sev == s.rule.Severity && lost[stageRing] > 0 && ordinaryOnly(lost):
		if sev.Rank() > SeverityMedium.Rank() {
			sev = SeverityMedium
		}
		what = "Only the main ring buffer lost records, ordinary file operations; the security ring (execs, forks, exits, " +
			"network, calls at other processes, opens of sensitive files) lost nothing."
	case lost["tracking"] > 0:
		what = "Processes forked while the tracked-pids map was full were not traced at all, nor anything they started; " +
			"any exec, connect or file access of theirs is missing."
	case sev == s.rule.Severity:
		what = "The counters do not know what they dropped: an exec, a connect or a sensitive file access may be among the missing events."
	}
	detail := fmt.Sprintf("The recording lost %d events (%s). %s The findings below are only as complete as the record.",
		total, strings.Join(parts, ", "), what)
	return []Finding{s.finding(sev, fmt.Sprintf("The recording lost %d events", total), detail, "", nil, false)}
}
