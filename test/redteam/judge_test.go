//go:build linux

package redteam

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
)

// The cells of the table. A technique's goal reached under polygraph is
// caught, unflagged (recorded, no finding names it) or unrecorded; one
// the run stopped (isolation, or polygraph's dropped capabilities) is
// blocked, blocked-unflagged or blocked-unrecorded by the same tests on
// the attempt. n/a: the technique cannot be tried in that mode (why is
// printed); broken: its own check failed without polygraph.
const (
	cellCaught            = "caught"
	cellUnflagged         = "unflagged"
	cellUnrecorded        = "unrecorded"
	cellBlocked           = "blocked"
	cellBlockedUnflagged  = "blocked-unflagged"
	cellBlockedUnrecorded = "blocked-unrecorded"
	cellNA                = "n/a"
	cellBroken            = "broken"
	cellError             = "error"
)

// cellOrder is the order of the totals.
var cellOrder = []string{cellCaught, cellBlocked, cellUnflagged, cellBlockedUnflagged, cellUnrecorded,
	cellBlockedUnrecorded, cellNA, cellBroken, cellError}

// strictOK says whether a cell meets the goal: every technique
// caught (or stopped and flagged) in every mode it applies to.
func strictOK(cell string) bool {
	return cell == cellCaught || cell == cellBlocked || cell == cellNA
}

// verdict is one cell and what led to it.
type verdict struct {
	cell string
	note string // why: the findings that named it, what was recorded, why n/a
}

// target is what a finding must name for a technique to count as caught,
// and what events show its act: a secret by identity or by any of its
// names, a sink by port, an outside helper by pid or by the socket or
// FIFO the tree reached it through, the act's own paths, DNS names, or a
// keyring operation.
type target struct {
	secrets []*secret
	ports   []int
	addrs   []string // sink addresses (any port)
	pids    []int
	paths   []string
	qname   string // a DNS name the act asks for (substring)
	key     bool   // a keyring read: an event of a key kind or method
	icmp    bool   // an ICMP send: an event whose protocol is ICMP
	words   []string
}

// targetOf collects a run's targets: its secrets, its outside helpers,
// its act paths, and the sinks when the technique sends. For a technique
// of class e, whose tree reads the secret itself, the secret is a target
// only of a stopped run (reached false): what must be caught is the
// channel it goes out by, but a run stopped at the read was stopped there.
func targetOf(r *run, reached bool) *target {
	tg := &target{paths: slices.Clone(r.acts)}
	names := make([]string, 0, len(r.secrets))
	for n := range r.secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if r.tech.class == "e" && reached {
			break
		}
		s := r.secrets[n]
		tg.secrets = append(tg.secrets, s)
		tg.words = append(tg.words, s.path)
		if rel, ok := strings.CutPrefix(s.path, r.home+"/"); ok {
			tg.words = append(tg.words, "~/"+rel)
		}
	}
	for _, h := range r.helpers {
		tg.pids = append(tg.pids, h.pid)
		tg.paths = append(tg.paths, h.paths...)
	}
	if r.tech.sends {
		tg.ports = []int{r.w.sinks.tcpPort, r.w.sinks.udpPort}
		if r.w.sinks.https != "" {
			tg.addrs = []string{r.w.sinks.https}
		}
		if r.tech.resolver && r.w.sinks.dnsAddr != "" {
			tg.addrs = append(tg.addrs, r.w.sinks.dnsAddr)
		}
		if r.w.sinks.dnsAddr != "" {
			tg.qname = r.id + "." + exfilDomain
		}
	}
	if r.tech.dns != "" {
		tg.qname = r.tech.dns
	}
	tg.key = r.tech.keyring
	tg.icmp = r.tech.icmp
	return tg
}

// matchEvent reports whether e shows the act on the target.
func (tg *target) matchEvent(e *event.Event) bool {
	for _, s := range tg.secrets {
		if e.Object != nil && e.Dev() == s.dev && e.Ino() == s.ino {
			return true
		}
		for _, p := range append([]string{s.path}, s.aliases...) {
			if e.Path == p || e.Path2 == p || e.PathRequested() == p {
				return true
			}
		}
	}
	for _, p := range tg.paths {
		if e.Path == p || e.Path2 == p || e.PathRequested() == p || e.Addr() == p {
			return true
		}
	}
	if e.Port() != 0 && slices.Contains(tg.ports, int(e.Port())) {
		return true
	}
	if e.Addr() != "" && slices.Contains(tg.addrs, e.Addr()) {
		return true
	}
	if e.PeerPID() != 0 && slices.Contains(tg.pids, int(e.PeerPID())) {
		return true
	}
	if e.TargetPID() != 0 && slices.Contains(tg.pids, int(e.TargetPID())) {
		return true
	}
	if tg.qname != "" && strings.Contains(strings.ToLower(e.QName()), strings.ToLower(tg.qname)) {
		return true
	}
	if tg.key && (strings.Contains(string(e.Kind), "key") || strings.Contains(e.Method(), "key")) {
		return true
	}
	if tg.icmp && strings.Contains(e.Proto(), "icmp") {
		return true
	}
	return false
}

// namedBy reports whether finding f names the target: one of its
// evidence events shows the act, or its title or detail names the
// secret, a sink's port, a helper's pid or an act's path.
func (tg *target) namedBy(f *detect.Finding, bySeq map[uint64]*event.Event) bool {
	for _, s := range f.Evidence {
		if e := bySeq[s]; e != nil && tg.matchEvent(e) {
			return true
		}
	}
	text := f.Title + "\n" + f.Detail
	for _, w := range slices.Concat(tg.words, tg.paths, tg.addrs) {
		if w != "" && strings.Contains(text, w) {
			return true
		}
	}
	for _, p := range tg.ports {
		if regexp.MustCompile(`:` + strconv.Itoa(p) + `\b`).MatchString(text) {
			return true
		}
	}
	for _, p := range tg.pids {
		if regexp.MustCompile(`\b` + strconv.Itoa(p) + `\b`).MatchString(text) {
			return true
		}
	}
	if tg.qname != "" && strings.Contains(strings.ToLower(text), strings.ToLower(tg.qname)) {
		return true
	}
	if tg.key && strings.Contains(strings.ToLower(text), "keyring") {
		return true
	}
	if tg.icmp && strings.Contains(strings.ToLower(text), "icmp") {
		return true
	}
	return false
}

// recordedBy reports whether the session shows the act: an event, or
// for an isolated run a refusal of a sink's address.
func (tg *target) recordedBy(a *analysis.Analysis) (bool, string) {
	for _, e := range a.Events {
		if tg.matchEvent(e) {
			return true, fmt.Sprintf("%s #%d %s", e.Kind, e.Seq, eventText(e))
		}
	}
	if a.Meta != nil && a.Meta.Isolation != nil {
		for _, d := range a.Meta.Isolation.Denied {
			for _, p := range tg.ports {
				if strings.HasSuffix(d.Dest, ":"+strconv.Itoa(p)) {
					return true, "refused " + d.Hook + " " + d.Dest
				}
			}
			for _, a := range tg.addrs {
				if strings.HasPrefix(d.Dest, a+":") {
					return true, "refused " + d.Hook + " " + d.Dest
				}
			}
			if tg.icmp && d.Hook == "sock_create" && d.Protocol == 1 {
				return true, "refused an ICMP socket (sock_create)"
			}
		}
	}
	return false, ""
}

// eventText is a short account of e for the notes.
func eventText(e *event.Event) string {
	switch {
	case e.QName() != "":
		return e.QName()
	case e.Addr() != "":
		s := e.Addr()
		if e.Port() != 0 {
			s += ":" + strconv.Itoa(int(e.Port()))
		}
		if e.PeerPID() != 0 {
			s += fmt.Sprintf(" (peer pid %d %s)", e.PeerPID(), e.PeerExe())
		}
		return s
	case e.Path2 != "":
		return e.Path + " -> " + e.Path2
	}
	s := e.Path
	if e.Failed() {
		s += fmt.Sprintf(" (%d)", *e.Result)
	}
	return s
}

// judge classifies a traced run: reached says whether the technique's
// goal was reached under polygraph.
func judge(r *run, a *analysis.Analysis, reached bool) verdict {
	if r.tech.judge != nil {
		return r.tech.judge(r, a, reached)
	}
	tg := targetOf(r, reached)
	min := r.tech.min()
	if !reached {
		// Nothing left: the refused attempt itself is what a finding can
		// name, at medium or more.
		min = detect.SeverityMedium
	}
	bySeq := make(map[uint64]*event.Event, len(a.Events))
	for _, e := range a.Events {
		bySeq[e.Seq] = e
	}
	var named, other []string
	for i := range a.Findings {
		f := &a.Findings[i]
		if f.Severity.Rank() < detect.SeverityMedium.Rank() {
			continue
		}
		line := fmt.Sprintf("%s %s%s", f.Severity, f.Rule, blockedMark(f))
		if f.Severity.Rank() >= min.Rank() && tg.namedBy(f, bySeq) {
			named = append(named, line)
		} else {
			other = append(other, line)
		}
	}
	recorded, what := tg.recordedBy(a)
	v := verdict{}
	switch {
	case len(named) > 0:
		v.cell, v.note = cellCaught, "by "+strings.Join(uniq(named), ", ")
	case recorded:
		v.cell, v.note = cellUnflagged, "recorded: "+what
	default:
		v.cell, v.note = cellUnrecorded, "no event shows it"
	}
	if len(other) > 0 {
		v.note += "; other findings: " + strings.Join(uniq(other), ", ")
	}
	if !reached {
		v.cell = map[string]string{cellCaught: cellBlocked, cellUnflagged: cellBlockedUnflagged, cellUnrecorded: cellBlockedUnrecorded}[v.cell]
	}
	return v
}

func blockedMark(f *detect.Finding) string {
	if f.Blocked {
		return " (blocked)"
	}
	return ""
}

func uniq(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}
