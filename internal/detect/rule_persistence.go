package detect

import (
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "persistence",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindOpen, event.KindRename, event.KindLink, event.KindMkdir, event.KindChmod, event.KindUnlink, event.KindExec},
		Summary:  "something was planted to run again later: SSH keys, shell rc files, cron, systemd units, git hooks, the dynamic linker's preload, autostart",
		Severity: SeverityHigh,
		Frameworks: Frameworks{
			ATTACK: []string{"T1098.004", "T1546.004", "T1053.003", "T1543.002", "T1546", "T1574.006", "T1547.013"},
			ATLAS:  []string{"AML.T0053"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check: persistence,
	})
}

// persistence is the persistence rule: changes to the persistence paths,
// and the commands that install cron jobs, services or git settings that
// run programs.
func persistence(s *run) []Finding {
	g := s.footholdGroups(setPersistence, func(r policy.PathRule, e *event.Event, p string) (Severity, string) {
		sev := severity(r.Severity, s.rule.Severity)
		note := "ATT&CK " + persistenceTechnique(p)
		if strings.Contains(p, "/.git/hooks/") {
			if by := s.installedBy(e.ExecID, hookInstallers); by != "" {
				return SeverityLow, note + "; installed by " + by + ", as hook managers do"
			}
		} else if strings.HasPrefix(p, "/etc/") || strings.HasPrefix(p, "/var/") || strings.HasPrefix(p, "/run/") {
			if by := s.installedBy(e.ExecID, systemInstallers); by != "" {
				return SeverityLow, note + "; written by a package install (" + by + ")"
			}
		}
		return sev, note
	})
	out := s.footholdFindings(g, "Persistence planted: ", "was changed")
	for _, i := range s.execs {
		e := s.events[i]
		what, ok := persistenceCommand(e.Argv())
		if !ok {
			continue
		}
		sev, note := s.rule.Severity, ""
		if by := s.installedBy(e.ExecID, append(slices.Clone(hookInstallers), systemInstallers...)); by != "" {
			sev, note = SeverityLow, "run by a package install ("+by+")"
		}
		out = append(out, s.commandFinding(e, sev, note, "Persistence command: "+excerpt(strings.Join(e.Argv(), " "), 60), what))
	}
	return out
}

// persistenceTechnique names the ATT&CK technique of a persistence path.
func persistenceTechnique(p string) string {
	switch {
	case strings.Contains(p, "/.ssh/"), strings.HasPrefix(p, "/etc/ssh/"):
		return "T1098.004 (SSH Authorized Keys)"
	case strings.Contains(p, "cron"):
		return "T1053.003 (Cron)"
	case strings.Contains(p, "systemd"):
		return "T1543.002 (Systemd Service)"
	case strings.HasPrefix(p, "/etc/ld.so"):
		return "T1574.006 (Dynamic Linker Hijacking)"
	case strings.Contains(p, "autostart"):
		return "T1547.013 (XDG Autostart Entries)"
	case strings.Contains(p, "/.git/hooks/"):
		return "T1546 (Event Triggered Execution: a git hook)"
	case strings.Contains(p, "Launch"):
		return "T1543.001 (Launch Agent)"
	case strings.HasPrefix(p, "/etc/init.d/"), p == "/etc/rc.local":
		return "T1037.004 (RC Scripts)"
	}
	return "T1546.004 (Unix Shell Configuration Modification)"
}

// gitRunKeys are git settings whose value git runs as a program.
var gitRunKeys = []string{"core.sshcommand", "core.hookspath", "core.fsmonitor", "core.pager", "core.editor"}

// persistenceCommand says what argv plants, when it is a command that
// installs something to run later: a crontab, an at job, a service
// enabled, a launch agent loaded, a git setting git runs as a program.
func persistenceCommand(argv []string) (string, bool) {
	if len(argv) == 0 {
		return "", false
	}
	args := argv[1:]
	switch policy.ProgramName(argv[0]) {
	case "crontab":
		if slices.Contains(args, "-l") {
			return "", false
		}
		return "installs a crontab (ATT&CK T1053.003, Cron)", true
	case "at", "batch":
		return "schedules a job (ATT&CK T1053.002, At)", true
	case "systemctl":
		if slices.ContainsFunc(args, func(a string) bool { return a == "enable" || a == "link" || a == "preset" }) {
			return "enables a service (ATT&CK T1543.002, Systemd Service)", true
		}
	case "launchctl":
		if slices.ContainsFunc(args, func(a string) bool { return a == "load" || a == "bootstrap" }) {
			return "loads a launch agent (ATT&CK T1543.001, Launch Agent)", true
		}
	case "git":
		rest, ok := argsAfter(argv, "config")
		if !ok {
			return "", false
		}
		for i, a := range rest {
			if a == "--get" || a == "--get-all" || a == "-l" || a == "--list" || a == "--unset" || a == "--unset-all" {
				return "", false
			}
			if slices.Contains(gitRunKeys, strings.ToLower(a)) && i+1 < len(rest) {
				return "sets " + a + ", a git setting git runs as a program (ATT&CK T1546, Event Triggered Execution)", true
			}
		}
	}
	return "", false
}
