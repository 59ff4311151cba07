package detect

import (
	"cmp"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/policy"
)

// Facts about execs that more than one rule reads.

// execTarget returns what exec e ran: the program itself, or the script an
// interpreter runs (viaInterp) when that was written. The kernel reports
// a #! script's exec as its interpreter with the script as argv[1].
func execTarget(e *event.Event, lastWrite func(string) *event.Event) (target string, viaInterp bool) {
	target = e.Path
	if e.Script() != "" && lastWrite(e.Script()) != nil {
		// The sensor names the script a #! interpreter runs.
		return e.Script(), true
	}
	if lastWrite(target) == nil {
		if sa := policy.ScriptArg(e.Argv()); sa != "" {
			if !path.IsAbs(sa) {
				sa = path.Join(e.Cwd(), sa)
			}
			return path.Clean(sa), true
		}
	}
	return target, false
}

// relaunch reports whether exec e ran the very program an ancestor of
// its process runs: the same bytes by the exec-time hash, whatever the
// file is called or where it was copied. Agents relaunch themselves
// (a node CLI re-executing process.execPath, a self-updating binary
// copied to a temporary directory and run from there): no new code runs,
// so neither where the copy lies nor who wrote it says anything.
func (s *facts) relaunch(e *event.Event) bool {
	if s.tree == nil || e.Script() != "" {
		return false // an interpreter running a script runs the script's code
	}
	if h := s.binaryHash(e); h != "" {
		return s.tree.HasAncestor(e.ExecID, func(im *lineage.Image) bool {
			return im.Exec != nil && s.binaryHash(im.Exec) == h
		})
	}
	// No hash (the file was gone before it could be hashed): the very
	// file an ancestor ran, by path, with no write to it recorded between
	// that exec and this one (a /proc/self/exe re-exec); or a file an
	// ancestor wrote after reading its own program (copying itself, as
	// the flow of the events shows it).
	if s.tree.HasAncestor(e.ExecID, func(im *lineage.Image) bool {
		return im.Exec != nil && im.Exec.Path == e.Path && !s.writtenBetween(e.Path, im.Exec.Seq, e.Seq)
	}) {
		return true
	}
	w := s.lastWriteBefore(e.Path, e.Seq)
	if w < 0 {
		return false
	}
	writer := s.events[w]
	return s.tree.HasAncestor(e.ExecID, func(im *lineage.Image) bool { return im.ID == writer.ExecID }) && s.readOwnProgram(w)
}

// lastWriteBefore is the index of the last event before seq that wrote
// or moved a file to path p, -1 for none.
func (s *facts) lastWriteBefore(p string, seq uint64) int {
	id := s.pathID(p)
	if id < 0 {
		return -1
	}
	i, _ := slices.BinarySearchFunc(s.events, seq, func(e *event.Event, q uint64) int { return cmp.Compare(e.Seq, q) })
	for i--; i >= 0; i-- {
		if s.byEvent[i].written == id {
			return i
		}
	}
	return -1
}

// readOwnProgram reports whether the image of events[w] opened the file
// its own exec ran for reading before events[w] (what copying itself
// takes: /proc/self/exe, which the sensor names by its file).
func (s *facts) readOwnProgram(w int) bool {
	writer := s.events[w]
	x := s.tree.ExecOf(writer.ExecID)
	im := s.tree.Image(writer.ExecID)
	if x == nil || im == nil {
		return false
	}
	for _, j := range im.Events {
		if int(j) >= w {
			break
		}
		if o := s.events[j]; o.Kind == event.KindOpen && o.Path == x.Path && s.byEvent[j].flags&fRead != 0 {
			return true
		}
	}
	return false
}

// writtenBetween reports whether a recorded event wrote or moved a file
// to path p after seq from and before seq to.
func (s *facts) writtenBetween(p string, from, to uint64) bool {
	w := s.lastWriteBefore(p, to)
	return w >= 0 && s.events[w].Seq >= from
}

// binaryHash is the exec-time SHA-256 of exec e's program: the event's
// own (a stored session's), else its binary verdict's (a live session's
// events reach the rules before their verdicts are stored with them).
func (s *facts) binaryHash(e *event.Event) string {
	if h := e.SHA256(); h != "" {
		return h
	}
	if s.binHash == nil {
		s.binHash = make(map[string]string, len(s.in.Verdicts))
		for i := range s.in.Verdicts {
			if r := &s.in.Verdicts[i]; r.Binary.SHA256 != "" {
				s.binHash[r.ExecID] = r.Binary.SHA256
			}
		}
	}
	return s.binHash[e.ExecID]
}

var reProcFD = regexp.MustCompile(`^/proc/(?:self|thread-self|\d+)/fd/`)

// fileless reports whether an exec path is a program that has no file: a
// memfd, shared memory, a file descriptor, or a deleted file.
func fileless(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "/memfd:"), strings.HasPrefix(p, "memfd:"):
		return "a memfd (anonymous memory file)", true
	case strings.HasPrefix(p, "/dev/shm/"):
		return "shared memory (/dev/shm)", true
	case strings.HasPrefix(p, "/proc/") && reProcFD.MatchString(p), strings.HasPrefix(p, "/dev/fd/"):
		return "a file descriptor", true
	case strings.HasSuffix(p, " (deleted)"):
		return "a file deleted while it ran", true
	}
	return "", false
}
