package detect

import (
	"os"
	"path"
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
		if r.Path == systemLocationEntry {
			note = "ATT&CK T1554 (Compromise Host Software Binary): the system's programs, libraries and configuration, which only root changes"
		}
		if e == nil {
			return sev, note // an attempt only the transcript tells (callAttempt)
		}
		if strings.Contains(p, "/.git/hooks/") {
			if by := s.projectHook(e.ExecID); by != "" {
				return SeverityLow, note + "; installed by " + by + ", as hook managers do"
			}
		} else if strings.HasPrefix(p, "/etc/") || strings.HasPrefix(p, "/var/") || strings.HasPrefix(p, "/run/") || strings.HasPrefix(p, "/usr/") {
			if by := s.repositoryInstall(e.ExecID); by != "" {
				return SeverityLow, note + "; written by a package install from the system's repositories (" + by + ")"
			}
			if by := s.installedBy(e.ExecID, systemInstallers); by != "" {
				note += "; written by the install of a package file the session brought (" + by + ")"
			}
		}
		return sev, note
	}, s.refusedSystemChange)
	out := s.footholdFindings(g, "Persistence planted: ", "was changed")
	out = append(out, shadowingPrograms(s)...)
	for _, i := range s.execs {
		e := s.events[i]
		what, ok := persistenceCommand(e.Argv())
		if !ok {
			continue
		}
		sev, note := s.rule.Severity, ""
		if by := s.repositoryInstall(e.ExecID); by != "" {
			sev, note = SeverityLow, "run by a package install from the system's repositories ("+by+")"
		} else if by := s.projectHook(e.ExecID); by != "" && strings.Contains(strings.Join(e.Argv(), " "), "hooksPath") {
			sev, note = SeverityLow, "run by "+by+" for the project, as hook managers do"
		}
		out = append(out, s.commandFinding(e, sev, note, "Persistence command: "+excerpt(strings.Join(e.Argv(), " "), 60), what))
	}
	return out
}

// systemLocations hold the system's programs, libraries and
// configuration: only root (or a package install) changes them, and what
// lands there runs, or is read by what runs, later. Written, most are the
// lists' business (or a package install's); a refused attempt on any of
// them is an unprivileged tree reaching for the system's code.
var systemLocations = []string{"/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/", "/usr/lib/", "/usr/lib32/", "/usr/lib64/",
	"/usr/libexec/", "/lib/", "/lib32/", "/lib64/", "/usr/local/bin/", "/usr/local/sbin/", "/usr/local/lib/",
	"/usr/share/", "/etc/", "/boot/"}

// systemLocationEntry is the path entry a refused change to a system
// location stands on (refusedSystemChange).
const systemLocationEntry = "(system location)"

// refusedSystemChange is persistence's entry for a refused attempt no
// list covers, in a system location: the privilege and tamper lists'
// paths are their rules' own, and an interpreter's bytecode cache
// (Python writing __pycache__ beside a system module as it imports it)
// is no attempt of the tree's.
func (s *run) refusedSystemChange(i int, id int32) (policy.PathRule, bool) {
	p := s.paths.strs[id]
	if !slices.ContainsFunc(systemLocations, func(d string) bool { return strings.HasPrefix(p, d) }) ||
		strings.Contains(p, "/__pycache__/") || strings.HasSuffix(p, ".pyc") {
		return policy.PathRule{}, false
	}
	if dir, name := path.Split(p); s.earlyProgramDir(strings.TrimSuffix(dir, "/")) && systemProgramNamed(name) != "" {
		return policy.PathRule{}, false // a program shadowed on PATH (shadowingPrograms)
	}
	if _, ok := s.matchAt(setPrivilege, i, id); ok {
		return policy.PathRule{}, false
	}
	if _, ok := s.matchAt(setTamper, i, id); ok {
		return policy.PathRule{}, false
	}
	return policy.PathRule{Path: systemLocationEntry, Severity: string(SeverityMedium)}, true
}

// Program directories searched before the system's own on the usual
// PATH: a program there runs instead of the system's of its name.
var (
	earlyPathDirs  = []string{"/usr/local/bin", "/usr/local/sbin"}
	earlyHomeDirs  = []string{".local/bin", "bin"}
	systemPathDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"}
	// Language package managers install console scripts into
	// ~/.local/bin and /usr/local/bin (pip's own pip among them).
	scriptInstallers = []string{"pip", "pip3", "pipx", "uv", "npm", "pnpm", "yarn", "cargo", "go", "gem"}
)

// shadowingPrograms are the findings on files written into a program
// directory searched before the system's (~/.local/bin, ~/bin,
// /usr/local/bin) under the name of a system program (git, sudo, ssh):
// every later command of that name runs the new file.
func shadowingPrograms(s *run) []Finding {
	var g groups
	for i := range s.byEvent {
		id, refused := s.byEvent[i].written, false
		if id < 0 {
			id, refused = s.refusedChange(i), true
		}
		if id < 0 || s.byEvent[i].flags&fOwn != 0 {
			continue
		}
		e, p := s.events[i], s.paths.strs[id]
		dir, name := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		if !s.earlyProgramDir(dir) || name == "" || s.inWorkspace(p) {
			continue
		}
		shadowed := systemProgramNamed(name)
		if shadowed == "" {
			continue
		}
		sev := s.rule.Severity
		note := "it shadows " + shadowed + ", ATT&CK T1574.007 (Path Interception by PATH Environment Variable)"
		if by := s.installedBy(e.ExecID, scriptInstallers); by != "" {
			sev, note = SeverityMedium, note+"; installed by "+by+", which puts its console scripts there"
		}
		key := p + "\x00" + s.actorKey(e)
		if refused {
			sev, note, key = SeverityMedium, s.refusal(i)+"; "+note, key+"\x00refused"
		}
		call, who := s.actor(e)
		g.add(key, func() *accessGroup {
			return &accessGroup{path: p, who: who, call: call, sev: sev, note: note, refused: refused}
		}, e.Seq)
	}
	return s.footholdFindings(&g, "Program shadowed on PATH: ", "was written")
}

// systemProgramNamed is the system program (in a system PATH directory)
// called name, "" for none.
func systemProgramNamed(name string) string {
	for _, d := range systemPathDirs {
		if fi, err := os.Stat(path.Join(d, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return path.Join(d, name)
		}
	}
	return ""
}

// earlyProgramDir reports whether dir is searched before the system's
// program directories on the usual PATH.
func (s *facts) earlyProgramDir(dir string) bool {
	if slices.Contains(earlyPathDirs, dir) {
		return true
	}
	for _, h := range s.homes {
		for _, d := range earlyHomeDirs {
			if dir == path.Join(h, d) {
				return true
			}
		}
	}
	return false
}

// gitRunsValue reports whether git runs the value of setting key as a
// program: the keys above, and the command and driver settings of
// filters, diff and merge drivers and credential helpers.
func gitRunsValue(key string) bool {
	k := strings.ToLower(key)
	if slices.Contains(gitRunKeys, k) {
		return true
	}
	for _, p := range gitRunPrefixes {
		if strings.HasPrefix(k, p) && (strings.HasSuffix(k, ".clean") || strings.HasSuffix(k, ".smudge") ||
			strings.HasSuffix(k, ".process") || strings.HasSuffix(k, ".command") || strings.HasSuffix(k, ".driver") ||
			strings.HasSuffix(k, ".textconv") || strings.HasSuffix(k, ".helper")) {
			return true
		}
	}
	return false
}

// persistenceTechnique names the ATT&CK technique of a persistence path.
func persistenceTechnique(p string) string {
	switch {
	case strings.HasSuffix(p, "/.ssh/config"), strings.HasPrefix(p, "/etc/ssh/ssh_config"):
		return "T1546 (Event Triggered Execution: ssh runs the ProxyCommand and LocalCommand its configuration names)"
	case strings.HasSuffix(p, "/.git/config"), strings.HasSuffix(p, "gitconfig"), strings.HasSuffix(p, "/git/config"), strings.HasSuffix(p, "hgrc"):
		return "T1546 (Event Triggered Execution: version control runs what its configuration names)"
	case strings.HasSuffix(p, ".pth"), strings.HasSuffix(p, "customize.py"):
		return "T1546 (Event Triggered Execution: the interpreter loads it at every start)"
	case strings.Contains(p, "/apt/"):
		return "T1546 (Event Triggered Execution: apt runs its hooks)"
	case strings.HasSuffix(p, ".md") || strings.Contains(p, "/.claude/") || strings.Contains(p, "/.codex/") || strings.Contains(p, "/.gemini/"):
		return "AML.T0081 (Modify AI Agent Configuration: every later session reads it)"
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
	case strings.Contains(p, "/.git/hooks/"), strings.HasSuffix(p, "/.git/hooks"):
		return "T1546 (Event Triggered Execution: a git hook)"
	case strings.Contains(p, "Launch"):
		return "T1543.001 (Launch Agent)"
	case strings.HasPrefix(p, "/etc/init.d/"), p == "/etc/rc.local":
		return "T1037.004 (RC Scripts)"
	}
	return "T1546.004 (Unix Shell Configuration Modification)"
}

// gitRunKeys are git settings whose value git runs as a program (or, for
// hooksPath, the directory of the programs it runs).
var gitRunKeys = []string{"core.sshcommand", "core.hookspath", "core.fsmonitor", "core.pager", "core.editor",
	"core.askpass", "credential.helper", "diff.external", "gpg.program", "sequence.editor",
	"uploadpack.packobjectshook", "sendemail.smtpserver"}

// gitRunPrefixes are families of git settings whose values run programs:
// filters (clean, smudge, process), diff drivers and merge drivers. An
// alias whose value starts with "!" runs it through the shell.
var gitRunPrefixes = []string{"filter.", "diff.", "merge.", "credential."}

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
			if i+1 < len(rest) && (gitRunsValue(a) || strings.HasPrefix(strings.ToLower(a), "alias.") && strings.HasPrefix(rest[i+1], "!")) {
				return "sets " + a + ", a git setting git runs as a program (ATT&CK T1546, Event Triggered Execution)", true
			}
		}
	}
	return "", false
}
