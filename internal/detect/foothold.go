package detect

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

// persistence and privilege-escalation report the same shape of thing:
// changes to a list of paths (writes, renames onto, links, mode changes)
// and commands that make such changes through a daemon the tree cannot
// see into (crontab, git config, setcap). This file holds what they
// share.

// footholdChange returns the id of the path event events[i] changed in a
// way that can plant something: what it wrote or moved a file to, a link
// it made, or a file whose mode it changed. -1 for none.
func (s *facts) footholdChange(i int) int32 {
	f := &s.byEvent[i]
	if f.written >= 0 {
		return f.written
	}
	e := s.events[i]
	if (e.Kind == event.KindLink || e.Kind == event.KindChmod) && succeeded(e) {
		return f.path
	}
	return -1
}

// refusedChange returns the id of the path events[i] tried to change in a
// way footholdChange counts, or tried to create (a directory, a link),
// when the kernel refused it for want of permission (EACCES, EPERM): an
// unprivileged tree reaching for a system file shows its intent even
// though nothing landed, whatever call carried it. A `mkdir -p` the
// kernel stopped on its way (stoppedWalks) stands at its last step for
// the directory it was making. -1 for none.
func (s *facts) refusedChange(i int) int32 {
	if id, ok := s.refused[int32(i)]; ok {
		return id // an open for writing, a rename, a stopped mkdir -p
	}
	e := s.events[i]
	switch e.Kind {
	case event.KindLink, event.KindChmod, event.KindMkdir:
		if p := s.byEvent[i].path; e.Failed() && p >= 0 && refusedErrno(*e.Result, s.paths.strs[p]) {
			return p
		}
	}
	return -1
}

// refusal says, for a finding's note, how the kernel refused the change
// events[i] tried (refusedChange).
func (s *facts) refusal(i int) string {
	e := s.events[i]
	if s.stopped[int32(i)] {
		return fmt.Sprintf("the command stopped at %s, which it could not enter, and failed: nothing was made", e.Path)
	}
	return fmt.Sprintf("the kernel refused it (%d), nothing was written", *e.Result)
}

// stoppedWalks finds the `mkdir -p` runs the kernel stopped before the
// directory they were asked to make: coreutils walks the path with mkdir
// and chdir, and a chdir refused (a directory of root's, mode 0700) is no
// call the sensor records, so the walk's last recorded step (a mkdir that
// found its directory there) is all that shows the attempt. The program
// is known by the file the kernel ran; an operand no mkdir of that image
// reached, below the last directory it did, was stopped there: that
// event stands for the operand in refused (refusedChange).
func (s *facts) stoppedWalks() {
	for _, n := range s.execs {
		x := s.events[n]
		if !slices.Contains(s.programNames(x.ExecID), "mkdir") {
			continue
		}
		im := s.tree.Image(x.ExecID)
		if im == nil {
			continue
		}
		if ex := im.Process.ExitEvent(); ex == nil || ex.ExitCode() == nil || *ex.ExitCode() == 0 {
			continue // running still, or it made what it was asked to
		}
		last := int32(-1)
		reached := map[string]bool{}
		for _, j := range im.Events {
			if e := s.events[j]; e.Kind == event.KindMkdir {
				reached[e.Path] = true
				last = j
			}
		}
		if last < 0 || s.events[last].Result == nil || *s.events[last].Result != -17 { // EEXIST: it went on from there
			continue
		}
		at := s.events[last].Path
		for _, a := range x.Argv()[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			if !path.IsAbs(a) {
				a = path.Join(x.Cwd(), a)
			}
			a = path.Clean(a)
			if reached[a] || !strings.HasPrefix(a, strings.TrimSuffix(at, "/")+"/") {
				continue
			}
			s.refused[last] = s.addPath(a)
			s.stopped[last] = true
			break
		}
	}
}

// callAttempt is a write or edit tool call the agent's transcript says
// the kernel refused (EACCES, EPERM) on a path no recorded event changed
// or tried to: a write tool that looks at the file first (Claude Code's
// Write stats it) stops at a refusal no call the sensor records carries.
// The agent's own account of the attempt is all there is of it.
type callAttempt struct {
	call *transcript.ToolCall
	path int32
}

// reDenied is how a refused write tool call's result reads.
var reDenied = regexp.MustCompile(`(?i)permission denied|\beacces\b|operation not permitted|\beperm\b`)

// callAttempts are the session's callAttempts, in transcript order.
func (s *facts) callAttempts() []callAttempt {
	if s.in.Transcript == nil {
		return nil
	}
	var seen map[int32]bool // the paths a recorded event changed or tried to
	var out []callAttempt
	for _, c := range s.in.Transcript.ToolCalls {
		if c.Kind != transcript.KindWrite && c.Kind != transcript.KindEdit || !c.IsError || !reDenied.MatchString(c.Result) {
			continue
		}
		if seen == nil {
			seen = map[int32]bool{}
			for i := range s.byEvent {
				seen[s.footholdChange(i)], seen[s.refusedChange(i)] = true, true
			}
		}
		for _, p := range c.Paths {
			if !path.IsAbs(p) {
				continue
			}
			if id := s.addPath(path.Clean(p)); !seen[id] {
				out = append(out, callAttempt{call: c, path: id})
			}
		}
	}
	return out
}

// matchAt is matchOf for events[i], or, for i < 0 (no event: a
// callAttempt), match against the session's home.
func (s *facts) matchAt(l *pathList, i int, id int32) (policy.PathRule, bool) {
	if i < 0 {
		return s.match(l, id)
	}
	return s.matchOf(l, i, id)
}

// attemptNote is the note of a callAttempt: what the transcript says.
func attemptNote(c *transcript.ToolCall) string {
	return fmt.Sprintf("the agent's transcript says the kernel refused it (%s) before any call the sensor records, nothing was written", excerpt(c.Result, 100))
}

// reAtomicTemp is an atomic write's temporary sibling of a file: what
// editors, agents' write tools and package managers write before they
// rename it onto its name ("f.tmp.29395.e0a1552a", "f.tmp", "f~").
var reAtomicTemp = regexp.MustCompile(`^(.+?)(?:\.tmp(?:\.[0-9a-zA-Z]+)*|~)$`)

// atomicTarget is the file path p's name stands for when it is an atomic
// write's temporary sibling, "" otherwise.
func atomicTarget(p string) string {
	dir, base := path.Split(p)
	m := reAtomicTemp.FindStringSubmatch(base)
	if m == nil || m[1] == "" || m[1] == "." {
		return ""
	}
	return dir + m[1]
}

// A system package manager installing from the system's repositories
// (signed, and the packages the system already trusts) writes users, cron
// jobs, units and setuid programs as a matter of course, itself or
// through its maintainer scripts; a package file the session brought
// (dpkg -i ./x.deb, apt install ./x.deb, rpm -i) is code like any other,
// and so is what a dependency's install hook writes (an npm postinstall
// runs in node_modules). The project's own hook managers (husky,
// pre-commit, lefthook, a prepare script of the project's package.json)
// install its git hooks.
var (
	systemInstallers = []string{"dpkg", "apt", "apt-get", "aptitude", "rpm", "dnf", "yum", "apk", "brew", "pacman", "zypper"}
	hookInstallers   = []string{"npm", "pnpm", "yarn", "bun", "pre-commit", "husky", "lefthook"}
)

// repositoryInstall returns the system installer image id runs under, ""
// for none or for one installing a package file rather than from the
// system's repositories (an argument naming a .deb, .rpm or .apk).
func (s *facts) repositoryInstall(id string) string {
	local := false
	by := ""
	check := func(im *lineage.Image) bool {
		for _, n := range s.programNames(im.ID) {
			if !slices.Contains(systemInstallers, n) {
				continue
			}
			if by == "" {
				by = n
			}
			if x := s.tree.ExecOf(im.ID); x != nil && slices.ContainsFunc(x.Argv()[min(1, len(x.Argv())):], packageFile) {
				local = true
			}
		}
		return false
	}
	if im := s.tree.Image(id); im != nil {
		check(im)
	}
	s.tree.HasAncestor(id, check)
	if local {
		return ""
	}
	return by
}

// packageFile reports whether a command-line argument names a package
// file the session brought: not one of the package managers' own caches,
// where apt, dnf and pacman put what they fetched from the repositories
// before they hand it to dpkg or rpm.
func packageFile(a string) bool {
	if strings.HasPrefix(a, "/var/cache/") {
		return false
	}
	for _, ext := range []string{".deb", ".rpm", ".apk", ".pkg.tar.zst", ".pkg.tar.xz"} {
		if strings.HasSuffix(a, ext) {
			return true
		}
	}
	return false
}

// projectHook returns the hook installer image id runs under when it runs
// for the project itself, "" otherwise: a dependency's install script runs
// in its node_modules directory, not the project's.
func (s *facts) projectHook(id string) string {
	if x := s.tree.ExecOf(id); x != nil && strings.Contains(x.Cwd(), "/node_modules/") {
		return ""
	}
	return s.installedBy(id, hookInstallers)
}

// installedBy returns the installer among names that image id or one of
// its ancestors runs, "" for none: the program the kernel ran
// (programNames), never argv[0], since a lower severity rests on it.
func (s *facts) installedBy(id string, names []string) string {
	found := ""
	check := func(im *lineage.Image) bool {
		for _, n := range s.programNames(im.ID) {
			for _, want := range names {
				if n == want {
					found = n
					return true
				}
			}
		}
		return false
	}
	if im := s.tree.Image(id); im != nil && check(im) {
		return found
	}
	s.tree.HasAncestor(id, check)
	return found
}

// footholdGroups collects, by path and actor, the changes to the paths of
// list l, with the severity sev gives each (from its entry and event; a
// nil event for a callAttempt, which no event stands for).
// refusedElse, when not nil, is asked of a refused attempt no entry of l
// covers: whether it counts all the same (an entry standing for it).
func (s *run) footholdGroups(l *pathList, sev func(r policy.PathRule, e *event.Event, path string) (Severity, string),
	refusedElse func(i int, id int32) (policy.PathRule, bool)) *groups {
	var g groups
	for i := range s.byEvent {
		id, refused := s.footholdChange(i), false
		if id < 0 {
			id, refused = s.refusedChange(i), true
		}
		if id < 0 || s.byEvent[i].flags&fOwn != 0 {
			continue // nothing changed, or the agent's own bookkeeping
		}
		r, ok := s.matchOf(l, i, id)
		if ok && r.IsClient(s.programNames(s.events[i].ExecID)) {
			// The program whose configuration it is writing it (git
			// init and git config writing .git/config): its commands
			// are judged by what they set (persistenceCommand).
			continue
		}
		dir, made := false, false
		if !ok {
			// A directory replaced (a symlink made, or a directory moved,
			// onto its name) is written into: what the list covers
			// inside it now comes from elsewhere. A directory the tree
			// tried to make, refused, was to hold what the list covers.
			if r, ok = s.replacedDir(l, i, id, refused); ok {
				dir, made = s.events[i].Kind != event.KindMkdir, s.events[i].Kind == event.KindMkdir
			}
		}
		if !ok && refused && refusedElse != nil {
			r, ok = refusedElse(i, id)
		}
		if !ok {
			continue
		}
		e, p := s.events[i], s.paths.strs[id]
		level, note := sev(r, e, p)
		switch {
		case dir:
			note = joinNote("the directory itself was replaced (a symlink or a rename onto it)", note)
		case made:
			note = joinNote("a directory to hold what runs later", note)
		}
		key := p + "\x00" + s.actorKey(e)
		if refused {
			// Nothing landed: the attempt is the finding, at medium at most.
			if level.Rank() > SeverityMedium.Rank() {
				level = SeverityMedium
			}
			note = joinNote(s.refusal(i), note)
			key += "\x00refused"
		}
		call, who := s.actor(e)
		g.add(key, func() *accessGroup {
			return &accessGroup{path: p, who: who, call: call, sev: level, note: note, refused: refused}
		}, e.Seq)
	}
	for _, a := range s.callAttempts() {
		r, ok := s.match(l, a.path)
		if !ok && refusedElse != nil {
			r, ok = refusedElse(-1, a.path)
		}
		if !ok {
			continue
		}
		p := s.paths.strs[a.path]
		level, note := sev(r, nil, p)
		if level.Rank() > SeverityMedium.Rank() {
			level = SeverityMedium
		}
		x := &accessGroup{path: p, who: "tool call " + s.describeCall(a.call.ID), call: a.call.ID, sev: level,
			note: joinNote(attemptNote(a.call), note), refused: true}
		g.put(p+"\x00call "+a.call.ID+"\x00refused", x)
	}
	return &g
}

// replacedDir is the entry of list l that covers what is inside the path
// with id, when events[i] made that path (a symlink, a rename onto it),
// or, refused, tried to make it a directory.
func (s *facts) replacedDir(l *pathList, i int, id int32, refused bool) (policy.PathRule, bool) {
	e := s.events[i]
	if e.Kind != event.KindLink && e.Kind != event.KindRename && !(refused && e.Kind == event.KindMkdir) {
		return policy.PathRule{}, false
	}
	h := s.home
	if x := s.homeOf(e); x > 0 {
		h = s.homes[x]
	}
	return l.ask(s, s.paths.strs[id]+"/_", h)
}

// footholdFindings turns groups into findings titled title + the path.
func (s *run) footholdFindings(g *groups, title, what string) []Finding {
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		title, what := title, what
		if x.refused {
			title, what = strings.TrimSuffix(title, ": ")+" (a refused attempt): ", "was to be changed"
		}
		detail := fmt.Sprintf("%s %s, by %s", s.display(x.path), what, x.who)
		if x.note != "" {
			detail += ": " + x.note
		}
		if len(x.seqs) > 1 {
			detail += fmt.Sprintf(" (%d events)", len(x.seqs))
		}
		out = append(out, s.finding(x.sev, title+s.display(x.path), detail+".", x.call, capped(x.seqs, 20), false))
	}
	return out
}

// commandFinding is the finding on exec e, a command that plants or
// widens a foothold (what says how).
func (s *run) commandFinding(e *event.Event, sev Severity, note, title, what string) Finding {
	call, who := s.actor(e)
	detail := fmt.Sprintf("%s ran `%s`, which %s", who, excerpt(strings.Join(e.Argv(), " "), 160), what)
	if note != "" {
		detail += "; " + note
	}
	return s.finding(sev, title, detail+".", call, []uint64{e.Seq}, false)
}

// argsAfter returns argv's arguments after the first one equal to verb
// (git's subcommand past its global options), nil when there is none.
func argsAfter(argv []string, verb string) ([]string, bool) {
	for i, a := range argv[1:] {
		if a == verb {
			return argv[i+2:], true
		}
	}
	return nil, false
}
