package detect

import (
	"fmt"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:    "privilege-escalation",
		Scope: ScopeEvent,
		Kinds: []event.Kind{event.KindOpen, event.KindRename, event.KindLink, event.KindMkdir, event.KindChmod, event.KindUnlink, event.KindExec,
			event.KindChown, event.KindXattr},
		Summary:  "who may do what was changed: sudoers, accounts and groups, PAM, setuid or setgid bits, file capabilities, ACLs, ownership",
		Severity: SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1548.001", "T1548.003", "T1136", "T1098", "T1222.002", "T1547.006"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check: privilegeEscalation,
	})
}

// Mode bits that make a program run as its owner or group.
const modeSetuid, modeSetgid = 0o4000, 0o2000

// privilegeEscalation is the privilege-escalation rule.
func privilegeEscalation(s *run) []Finding {
	byInstall := func(e *event.Event) (Severity, string) {
		if e == nil {
			return s.rule.Severity, "" // an attempt only the transcript tells (callAttempt)
		}
		if by := s.repositoryInstall(e.ExecID); by != "" {
			return SeverityLow, "by a package install from the system's repositories (" + by + ")"
		}
		if by := s.installedBy(e.ExecID, systemInstallers); by != "" {
			return s.rule.Severity, "by the install of a package file the session brought (" + by + ")"
		}
		return s.rule.Severity, ""
	}
	g := s.footholdGroups(setPrivilege, func(r policy.PathRule, e *event.Event, p string) (Severity, string) {
		sev, note := byInstall(e)
		if note == "" {
			sev = severity(r.Severity, sev)
		}
		return sev, joinNote("ATT&CK "+privilegeTechnique(p), note)
	}, nil)
	out := s.footholdFindings(g, "Privileges changed: ", "was changed")
	out = append(out, setidBits(s, byInstall)...)
	out = append(out, attrChanges(s, byInstall)...)
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
		if s.followedAt(i) || e.Mode == nil || *e.Mode&(modeSetuid|modeSetgid) == 0 || !succeeded(e) ||
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

// attrChanges are the findings on changes of who owns a file or what its
// extended attributes grant, whatever program made them (setcap, setfacl,
// chown, or a script calling setxattr itself): file capabilities set
// (high: the program runs with them whoever starts it), an ACL set or an
// owner changed on a privilege path (high) or on a file outside the
// workspace and temporary directories (medium: access given to someone
// the mode bits did not name). Inside the workspace they are the
// project's own business. Attempts that failed count: the intent is the
// finding.
func attrChanges(s *run, byInstall func(*event.Event) (Severity, string)) []Finding {
	var g groups
	for i := range s.byEvent {
		e := s.events[i]
		if e.Attr == nil || s.byEvent[i].flags&fOwn != 0 {
			continue
		}
		var what, tech string
		sev := SeverityMedium
		_, privPath := s.matchOf(setPrivilege, i, s.byEvent[i].path)
		switch {
		case e.Kind == event.KindXattr && e.Attr.XattrOp == "set" && e.Attr.XattrName == "security.capability":
			what, tech, sev = "file capabilities set", "T1548 (Abuse Elevation Control Mechanism)", SeverityHigh
		case e.Kind == event.KindXattr && strings.HasPrefix(e.Attr.XattrName, "system.posix_acl_"):
			what, tech = "ACL "+e.Attr.XattrOp+" ("+e.Attr.XattrName+")", "T1222.002 (Linux File and Directory Permissions Modification)"
		case e.Kind == event.KindChown:
			what, tech = "owner changed"+ownerText(e.Attr), "T1222.002 (Linux File and Directory Permissions Modification)"
		default:
			continue
		}
		if privPath {
			sev = SeverityHigh
		} else if sev != SeverityHigh && (s.inWorkspace(e.Path) || s.temporary(e.Path)) {
			continue
		}
		if by, note := byInstall(e); note != "" && by.Rank() < sev.Rank() {
			sev, what = by, joinNote(what, note)
		}
		if e.Failed() {
			what += fmt.Sprintf(", refused (%d)", *e.Result)
		}
		call, who := s.actor(e)
		g.add(e.Path+"\x00"+s.actorKey(e)+"\x00"+what, func() *accessGroup {
			return &accessGroup{path: e.Path, who: who, call: call, sev: sev, note: what + ", ATT&CK " + tech}
		}, e.Seq)
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		detail := fmt.Sprintf("%s: %s by %s.", s.display(x.path), x.note, x.who)
		out = append(out, s.finding(x.sev, "Privileges changed: "+s.display(x.path), detail, x.call, capped(x.seqs, 20), false))
	}
	return out
}

// ownerText says which ids a chown asked for.
func ownerText(a *event.Attr) string {
	var parts []string
	if a.Owner != nil {
		parts = append(parts, fmt.Sprintf("user %d", *a.Owner))
	}
	if a.OwnerGroup != nil {
		parts = append(parts, fmt.Sprintf("group %d", *a.OwnerGroup))
	}
	if len(parts) == 0 {
		return ""
	}
	return " to " + strings.Join(parts, ", ")
}

// privilegeTechnique names the ATT&CK technique of a privilege path.
func privilegeTechnique(p string) string {
	switch {
	case strings.Contains(p, "sudoers"), strings.HasSuffix(p, "doas.conf"):
		return "T1548.003 (Sudo and Sudo Caching)"
	case p == "/etc/passwd", p == "/etc/shadow", p == "/etc/subuid", p == "/etc/subgid":
		return "T1136 (Create Account) / T1098 (Account Manipulation)"
	case strings.HasPrefix(p, "/proc/sys/"), strings.HasPrefix(p, "/sys/"), strings.Contains(p, "modprobe"),
		strings.Contains(p, "/udev/"), strings.Contains(p, "binfmt"):
		return "T1547.006 (Kernel Modules and Extensions): the kernel runs what it names, as root"
	case strings.HasPrefix(p, "/var/lib/dpkg/"):
		return "T1554 (Compromise Host Software Binary): dpkg's checksums vouch for the system's programs"
	}
	return "T1098 (Account Manipulation)"
}
