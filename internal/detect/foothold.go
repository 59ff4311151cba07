package detect

import (
	"fmt"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/policy"
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

// System package managers run maintainer scripts that add users, cron
// jobs, units and setuid programs as a matter of course; the project
// tools install git hooks (husky, pre-commit, lefthook).
var (
	systemInstallers = []string{"dpkg", "apt", "apt-get", "aptitude", "rpm", "dnf", "yum", "apk", "brew", "pacman", "zypper"}
	hookInstallers   = []string{"npm", "pnpm", "yarn", "bun", "pre-commit", "husky", "lefthook"}
)

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
// list l, with the severity sev gives each (from its entry and event).
func (s *run) footholdGroups(l *pathList, sev func(r policy.PathRule, e *event.Event, path string) (Severity, string)) *groups {
	var g groups
	for i := range s.byEvent {
		id := s.footholdChange(i)
		if id < 0 {
			continue
		}
		r, ok := s.matchOf(l, i, id)
		if !ok {
			continue
		}
		e, p := s.events[i], s.paths.strs[id]
		level, note := sev(r, e, p)
		call, who := s.actor(e)
		g.add(p+"\x00"+s.actorKey(e), func() *accessGroup {
			return &accessGroup{path: p, who: who, call: call, sev: level, note: note}
		}, e.Seq)
	}
	return &g
}

// footholdFindings turns groups into findings titled title + the path.
func (s *run) footholdFindings(g *groups, title, what string) []Finding {
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
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
	detail := fmt.Sprintf("%s ran `%s`, which %s", who, excerpt(strings.Join(e.Argv, " "), 160), what)
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
