package detect

import (
	"strconv"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

// Secrets by identity. A credential file is the file, not its name: a
// rename into the workspace, a hard link, a bind mount or a renamed parent
// directory reach the same (dev, ino) under another path. The facts know
// the identities of the credential files the session began with
// (meta.Secrets) and of those opened by their own name during the
// session, and an open of the same identity under any other name is a
// read of that secret (secretMatch), judged as a read by its name would
// be.

// fileID is a file's identity: its device and inode as stat(2) gives them.
type fileID struct{ dev, ino uint64 }

// learnSecrets fills s.secrets: the identities of meta.Secrets, then of
// every file opened by the name of a credential file (the sensitive and
// agent-config lists), each with the id of that name.
func (s *facts) learnSecrets() {
	s.secrets = map[fileID]int32{}
	for _, x := range s.in.Meta.Secrets {
		k := fileID{x.Dev, x.Ino}
		if _, ok := s.secrets[k]; !ok {
			s.secrets[k] = s.addPath(x.Path)
		}
	}
	for i := range s.byEvent {
		e := s.events[i]
		if e.Kind != event.KindOpen || e.Object == nil || s.byEvent[i].path < 0 || e.Failed() {
			continue
		}
		k := fileID{e.Object.Dev, e.Object.Ino}
		if _, ok := s.secrets[k]; ok {
			continue
		}
		id := s.byEvent[i].path
		if _, ok := s.matchOf(setSensitive, i, id); ok {
			s.secrets[k] = id
		} else if _, ok := s.matchOf(setAgentConfig, i, id); ok {
			s.secrets[k] = id
		}
	}
}

// secretMatch is matchOf for a list of credential files (setSensitive,
// setAgentConfig): the entry the path of events[i] matches by name, or
// else, for an open, the entry the name of the credential file it opened
// by identity matches; alias is that name ("" for a match by name).
func (s *facts) secretMatch(l *pathList, i int, id int32) (r policy.PathRule, alias string, ok bool) {
	if r, ok := s.matchOf(l, i, id); ok {
		return r, "", true
	}
	e := s.events[i]
	if e.Object == nil {
		return policy.PathRule{}, "", false
	}
	canon, known := s.secrets[fileID{e.Object.Dev, e.Object.Ino}]
	if !known || canon == id {
		return policy.PathRule{}, "", false
	}
	if r, ok := s.matchOf(l, i, canon); ok {
		return r, s.paths.strs[canon], true
	}
	return policy.PathRule{}, "", false
}

// otherEnviron reports whether e opened another process's environment
// (/proc/PID/environ, /proc/PID/task/TID/environ of a PID not e's own),
// and which process's.
func otherEnviron(e *event.Event) (pid int, ok bool) {
	rest, found := strings.CutPrefix(e.Path, "/proc/")
	if !found || !strings.HasSuffix(rest, "/environ") {
		return 0, false
	}
	n, err := strconv.Atoi(rest[:strings.IndexByte(rest, '/')])
	if err != nil || n <= 0 || uint32(n) == e.PID {
		return 0, false
	}
	return n, true
}
