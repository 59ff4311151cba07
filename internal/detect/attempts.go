package detect

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

// Attempts on a secret that did not reach it. The intent is the evidence
// whether or not it worked: an isolated session hides the credential
// stores (a masked directory reads as empty, a file inside it is not
// there), a root tree runs without the capabilities that would open
// another process's environment, and a secret can be taken under another
// name before it is read. Each of these leaves a record (a failed open,
// an open of the mask, a link or a rename of the store) that names the
// secret; the rules judge it as the read it was meant to be, marked
// (blocked) when it did not get the bytes.

// maskOf returns the masked path (meta.isolation.masked) p lies in, ""
// for none (or for a path kept visible inside a mask).
func (s *facts) maskOf(p string) string {
	iso := s.in.Meta.Isolation
	if iso == nil || p == "" || !s.masked(p) {
		return ""
	}
	for _, m := range iso.Masked {
		if p == m || strings.HasPrefix(p, m+"/") {
			return m
		}
	}
	return ""
}

// storeIn returns the credential file that path p of events[i] is, or
// that it holds when it is a directory: a file of the sensitive list by
// name, or one the session knew by identity (meta.Secrets) under it.
// store is the file's path id; r the sensitive list's entry for it.
func (s *facts) storeIn(i int, p string) (store int32, r policy.PathRule, ok bool) {
	if p == "" {
		return -1, r, false
	}
	if id := s.pathID(p); id >= 0 {
		if r, ok := s.matchOf(setSensitive, i, id); ok {
			return id, r, true
		}
	}
	dir := strings.TrimSuffix(p, "/") + "/"
	for _, x := range s.in.Meta.Secrets {
		if !strings.HasPrefix(x.Path, dir) {
			continue
		}
		if sid := s.pathID(x.Path); sid >= 0 {
			if r, ok := s.matchOf(setSensitive, i, sid); ok {
				return sid, r, true
			}
		}
	}
	return -1, r, false
}

// otherProcFile reports whether e opened a file of another process's
// /proc directory that hands over what it holds (/proc/PID/environ, its
// API keys and tokens; /proc/PID/fd/N, a file it holds open), and names
// it: the process's pid and what the file is.
func otherProcFile(e *event.Event) (pid int, what string, ok bool) {
	rest, found := strings.CutPrefix(e.Path, "/proc/")
	if !found {
		return 0, "", false
	}
	num, tail, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || uint32(n) == e.PID {
		return 0, "", false
	}
	if t, ok := strings.CutPrefix(tail, "task/"); ok {
		if _, t2, ok := strings.Cut(t, "/"); ok {
			tail = t2
		}
	}
	switch {
	case tail == "environ":
		return n, fmt.Sprintf("the environment of process %d, where API keys and tokens live", n), true
	case strings.HasPrefix(tail, "fd/") && len(tail) > 3:
		return n, fmt.Sprintf("a file process %d holds open (its descriptor %s)", n, tail[3:]), true
	}
	return 0, "", false
}

// refusedProcOpen reports whether e is a failed open of another process's
// /proc file (otherProcFile) that the kernel refused, and what the file
// is: refused for want of permission, or not there because the
// isolation's own PID namespace does not show a process outside the tree.
// A pidfd_open refused there (ESRCH; the sensor names it /proc/PID, the
// open of the process itself) is the first step of taking the files the
// process holds open (pidfd_getfd), stopped before any names one.
func (s *facts) refusedProcOpen(e *event.Event) (what string, ok bool) {
	if e.Kind != event.KindOpen || !e.Failed() || !strings.HasPrefix(e.Path, "/proc/") {
		return "", false
	}
	isolated := s.in.Meta.Isolation != nil && s.in.Meta.Isolation.PIDNamespace
	switch *e.Result {
	case -13, -1:
	case -2:
		if !isolated {
			return "", false
		}
	case -3: // ESRCH: only pidfd_open's record has it
		n, err := strconv.Atoi(strings.TrimPrefix(e.Path, "/proc/"))
		if !isolated || err != nil || n <= 0 || uint32(n) == e.PID {
			return "", false
		}
		return fmt.Sprintf("process %d itself (pidfd_open, the first step of copying the files it holds open with pidfd_getfd), "+
			"not in the isolation's PID namespace", n), true
	default:
		return "", false
	}
	_, what, ok = otherProcFile(e)
	return what, ok
}

// storeMoves are the sensitive-read groups for credential stores taken
// under another name (a hard or symbolic link to one, a rename of one or
// of the directory that holds it), whether or not anything read them
// after (a read of it, by any name, is the finding then: secretMatch
// names the move), and under --isolate, where the store is masked, the
// move is all there is.
func storeMoves(s *run, g *groups) {
	read := map[string]bool{} // what the groups already hold a read of: the move adds nothing
	for _, k := range g.order {
		if x := g.m[k]; x.title == "" && !x.refused {
			read[x.path] = true
		}
	}
	for i := range s.byEvent {
		e := s.events[i]
		src := moveSource(e)
		if src == "" || s.agentOwn(e) {
			continue
		}
		store, r, ok := s.storeIn(i, src)
		if !ok || r.IsClient(s.programNames(e.ExecID)) {
			continue // no credential, or its own client keeping its file
		}
		mask := s.maskOf(src)
		name := s.paths.strs[store]
		if read[name] {
			continue
		}
		var note, title string
		switch {
		case e.Kind == event.KindLink:
			title, note = "Credential file linked: ", "linked as "+s.display(e.Path)
		case src != name:
			title, note = "Credential file moved: ", "its directory "+s.display(src)+" moved to "+s.display(e.Path2)
		default:
			title, note = "Credential file moved: ", "moved to "+s.display(e.Path2)
		}
		note += ", the same secret under another name"
		blocked := mask != ""
		call, who := s.actor(e)
		key := "move\x00" + name + "\x00" + s.actorKey(e)
		g.add(key, func() *accessGroup {
			return &accessGroup{path: name, who: who, call: call, sev: SeverityMedium, note: note, blocked: blocked, title: title}
		}, e.Seq)
	}
}

// moveSource is the existing name a link or rename event takes a file
// from: a rename's old name, a link's target (a symlink's text read from
// the link's directory); "" for other events.
func moveSource(e *event.Event) string {
	switch e.Kind {
	case event.KindRename:
		return e.Path
	case event.KindLink:
		src := e.Path2
		if src != "" && !strings.HasPrefix(src, "/") {
			src = path.Join(path.Dir(e.Path), src)
		}
		return src
	}
	return ""
}

// maskedArgs are the sensitive-read groups, under --isolate, for the
// credential files a command named on its command line inside a masked
// store when nothing of it opened them: the program looked first (a
// stat, an access) and gave up on a file that is not there
// (`ssh-keygen -y -f ~/.ssh/id_ed25519`, `diff /dev/null KEY`). A file
// the group already holds a read or an attempt of is not counted again.
func maskedArgs(s *run, g *groups) {
	if s.in.Meta.Isolation == nil || len(s.in.Meta.Isolation.Masked) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, k := range g.order {
		seen[g.m[k].path] = true
	}
	for _, n := range s.execs {
		e := s.events[n]
		argv := e.Argv()
		for _, a := range argv[min(1, len(argv)):] {
			if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, "/") {
				a = v // --file=PATH
			}
			if a == "" || a[0] == '-' {
				continue
			}
			if !strings.HasPrefix(a, "/") {
				if e.Cwd() == "" {
					continue
				}
				a = path.Join(e.Cwd(), a)
			}
			if s.maskOf(a) == "" {
				continue
			}
			store, _, ok := s.storeIn(int(n), a)
			if !ok {
				continue
			}
			p := s.paths.strs[store]
			if seen[p] {
				continue
			}
			seen[p] = true
			call, who := s.actor(e)
			g.add(p+"\x00"+s.actorKey(e)+"\x00named", func() *accessGroup {
				return &accessGroup{path: p, who: who, call: call, sev: SeverityMedium, blocked: true,
					note: "named on the command line `" + excerpt(strings.Join(argv, " "), 80) + "`"}
			}, e.Seq)
		}
	}
}
