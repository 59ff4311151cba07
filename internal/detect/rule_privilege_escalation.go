package detect

import (
	"fmt"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "privilege-escalation",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindOpen, event.KindRename, event.KindLink, event.KindMkdir, event.KindChmod, event.KindUnlink, event.KindExec},
		Summary:  "who may do what was changed: sudoers, accounts and groups, PAM, setuid or setgid bits, file capabilities",
		Severity: SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1548.001", "T1548.003", "T1136", "T1098"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check: privilegeEscalation,
	})
}

// Mode bits that make a program run as its owner or group.
const modeSetuid, modeSetgid = 0o4000, 0o2000

// privilegeEscalation is the privilege-escalation rule.
func privilegeEscalation(s *run) []Finding {
	byInstall := func(e *event.Event) (Severity, string) {
		if by := s.installedBy(e.ExecID, systemInstallers); by != "" {
			return SeverityLow, "by a package install (" + by + ")"
		}
		return s.rule.Severity, ""
	}
	g := s.footholdGroups(setPrivilege, func(r policy.PathRule, e *event.Event, p string) (Severity, string) {
		sev, note := byInstall(e)
		if note == "" {
			sev = severity(r.Severity, sev)
		}
		return sev, joinNote("ATT&CK "+privilegeTechnique(p), note)
	})
	out := s.footholdFindings(g, "Privileges changed: ", "was changed")
	out = append(out, setidBits(s, byInstall)...)
	for _, i := range s.execs {

		e := s.events[i]
		if len(e.Argv()) < 2 || policy.ProgramName(e.Argv()[0]) != "setcap" || e.Argv()[1] == "-v" {
			continue
		}
		sev, note := byInstall(e)
		out = append(out, s.commandFinding(e, sev, note, "File capabilities set: "+excerpt(strings.Join(e.Argv(), " "), 60),
			"gives a program capabilities (ATT&CK T1548, Abuse Elevation Control Mechanism)"))
	}
	return out
}

// setidBits are the findings on chmods and creations that set the setuid
// or setgid bit. A setgid directory (made in the session) is a shared
// directory, not a privilege; setgid alone on what may be one is medium.
func setidBits(s *run, byInstall func(*event.Event) (Severity, string)) []Finding {
	dirs := map[string]bool{}
	for _, e := range s.events {
		if e.Kind == event.KindMkdir && succeeded(e) {
			dirs[e.Path] = true
		}
	}
	var bits groups
	for i := range s.byEvent {
		e := s.events[i]
		if e.Mode == nil || *e.Mode&(modeSetuid|modeSetgid) == 0 || !succeeded(e) ||
			!(e.Kind == event.KindChmod || e.Kind == event.KindOpen && s.byEvent[i].flags&fCreated != 0) {
			continue
		}
		sev, note := byInstall(e)
		which := "setuid"
		if *e.Mode&modeSetuid == 0 {
			if dirs[e.Path] {
				continue
			}
			which = "setgid"
			if sev.Rank() > SeverityMedium.Rank() {
				sev, note = SeverityMedium, joinNote(note, "setgid alone also marks shared directories")
			}
		}
		call, who := s.actor(e)
		bits.add(e.Path+"\x00"+s.actorKey(e), func() *accessGroup {
			return &accessGroup{path: e.Path, who: who, call: call, sev: sev,
				note: joinNote(fmt.Sprintf("%s, mode %04o, ATT&CK T1548.001 (Setuid and Setgid)", which, *e.Mode&0o7777), note)}
		}, e.Seq)
	}
	var out []Finding
	for _, k := range bits.order {
		x := bits.m[k]
		detail := fmt.Sprintf("%s was given the setuid or setgid bit by %s: %s.", s.display(x.path), x.who, x.note)
		out = append(out, s.finding(x.sev, "Setuid or setgid bit set: "+s.display(x.path), detail, x.call, capped(x.seqs, 20), false))
	}
	return out
}

// privilegeTechnique names the ATT&CK technique of a privilege path.
func privilegeTechnique(p string) string {
	switch {
	case strings.Contains(p, "sudoers"), strings.HasSuffix(p, "doas.conf"):
		return "T1548.003 (Sudo and Sudo Caching)"
	case p == "/etc/passwd", p == "/etc/shadow", p == "/etc/subuid", p == "/etc/subgid":
		return "T1136 (Create Account) / T1098 (Account Manipulation)"
	}
	return "T1098 (Account Manipulation)"
}

// joinNote joins two notes with "; ", either of which may be empty.
func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
