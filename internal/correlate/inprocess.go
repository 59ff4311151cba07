package correlate

import (
	"path/filepath"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/fdpath"
)

// eventPaths are an event's paths for matching. A path named through a
// descriptor the session never saw opened (fdpath left it as it was)
// has only its tail: path is "" and rest what follows the fd directory,
// which matches a call's file by suffix.
type eventPaths struct {
	path, rest, path2, rest2 string
}

// pathsOf returns e's paths for matching.
func pathsOf(e *event.Event) eventPaths {
	var r eventPaths
	r.path, r.rest = unresolved(e, e.Path)
	r.path2, r.rest2 = unresolved(e, e.Path2)
	return r
}

// unresolved splits p, a path of e, when it is still named through a
// descriptor: "" and the rest after the fd. The descriptor itself
// (/dev/fd/1: a device, not a path) stays p.
func unresolved(e *event.Event, p string) (string, string) {
	if _, rest, ok := fdpath.Split(p, e.PID); ok && rest != "" {
		return "", rest
	}
	return p, ""
}

// inProcess finds the call whose window holds the event and whose paths
// it touches, best match first.
func (a *attributor) inProcess(e *event.Event, path, rest, path2, rest2 string) *callInfo {
	var best *callInfo
	bestScore, bestStrict := 0, false
	for _, ci := range a.calls.at(e.TS) {
		write := e.IsWrite()
		s := ci.paths.score(path, rest, write)
		if s2 := ci.paths.score(path2, rest2, write); s2 > s {
			s = s2
		}
		if s == 0 {
			continue
		}
		strict := ci.strictlyHolds(e.TS)
		if s > bestScore || s == bestScore && (strict && !bestStrict || strict == bestStrict && ci.start.After(best.start)) {
			best, bestScore, bestStrict = ci, s, strict
		}
	}
	return best
}

// score rates how p touches what the set names: 3 a named file, 2 one of
// its temporary siblings (an atomic write's "file.tmp.123") or a searched
// directory itself, 1 inside a searched directory or a written file's
// directory. rest is the tail of a /proc/self/fd/N/… path whose directory
// could not be resolved; it matches a named file by suffix. A search does
// not write: writes inside a searched directory do not match it.
func (s *pathSet) score(p, rest string, write bool) int {
	if p == "" && rest == "" {
		return 0
	}
	best := 0
	set := func(n int) {
		if n > best {
			best = n
		}
	}
	var pdir, pbase string
	if p != "" {
		pdir, pbase = filepath.Split(p)
	}
	for _, x := range s.exact {
		switch {
		case p != "" && p == x:
			return 3
		case p != "":
			xdir, xbase := filepath.Split(x)
			if pdir == xdir && tempSibling(pbase, xbase) {
				set(2)
			}
		case rest != "" && restMatches(rest, x):
			set(2)
		}
	}
	if p == "" {
		return best
	}
	for _, d := range s.dirs {
		if write {
			break
		}
		switch {
		case p == d:
			set(2)
		case under(p, d):
			set(1)
		}
	}
	for _, d := range s.parents {
		if p == d {
			set(1)
		}
	}
	return best
}

// restMatches reports whether the tail of an unresolved /proc/self/fd/N/
// path names x, or a temporary sibling of it.
func restMatches(rest, x string) bool {
	if strings.HasSuffix(x, "/"+rest) {
		return true
	}
	rdir, rbase := filepath.Split(rest)
	xdir, xbase := filepath.Split(x)
	return tempSibling(rbase, xbase) && (rdir == "" || strings.HasSuffix(xdir, "/"+rdir))
}

// tempSibling reports whether name is a temporary file for target: an
// atomic write's "target.tmp.123", ".target.swp", "target~".
func tempSibling(name, target string) bool {
	return strings.HasPrefix(name, target+".") || strings.HasPrefix(name, "."+target) || name == target+"~"
}
