package session

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ErrNoSession is wrapped by Resolve's error when nothing matches.
var ErrNoSession = errors.New("no session matches")

// AmbiguousError is Resolve's error when a prefix matches more than one
// session.
type AmbiguousError struct {
	Prefix  string
	Matches []string // the matching ids, sorted
}

// Error lists the first few matches, so the user can pick one.
func (e *AmbiguousError) Error() string {
	const show = 5
	list := strings.Join(e.Matches[:min(show, len(e.Matches))], ", ")
	if len(e.Matches) > show {
		list += fmt.Sprintf(", ... (%d in all)", len(e.Matches))
	}
	return fmt.Sprintf("session prefix %s is ambiguous: %s", e.Prefix, list)
}

// Resolve turns a SESSION argument into a file path. ref is "last" (the
// newest session), a path to an existing file, a session id, or a prefix
// of exactly one id.
func Resolve(home, ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("%w: empty session reference", ErrNoSession)
	}
	if ref != "last" && (strings.ContainsRune(ref, os.PathSeparator) || strings.HasSuffix(ref, ".db")) {
		if st, err := os.Stat(ref); err == nil && !st.IsDir() {
			return filepath.Abs(ref)
		}
		if strings.ContainsRune(ref, os.PathSeparator) {
			return "", fmt.Errorf("%w %s: no such file", ErrNoSession, ref)
		}
	}
	ids, err := ids(home)
	if err != nil {
		return "", err
	}
	if ref == "last" {
		if len(ids) == 0 {
			return "", fmt.Errorf("%w last: no sessions in %s", ErrNoSession, sessionsDir(home))
		}
		return newest(home, ids), nil
	}
	var matches []string
	for _, id := range ids {
		if id == ref {
			return sessionPath(home, id), nil
		}
		if strings.HasPrefix(id, ref) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		if st, err := os.Stat(ref); err == nil && !st.IsDir() {
			return filepath.Abs(ref) // a file in the working directory
		}
		return "", fmt.Errorf("%w %s (see `polygraph sessions`)", ErrNoSession, ref)
	case 1:
		return sessionPath(home, matches[0]), nil
	}
	return "", &AmbiguousError{Prefix: ref, Matches: matches}
}

// newest returns the path of the session that started last. Ids begin
// with the start time to the second, so only sessions sharing the newest
// second need their metadata read.
func newest(home string, ids []string) string {
	top := ids[len(ids)-1]
	var tied []string
	for _, id := range ids {
		if stamp(id) == stamp(top) {
			tied = append(tied, id)
		}
	}
	best, bestAt := top, time.Time{}
	for _, id := range tied {
		r, err := Open(sessionPath(home, id))
		if err != nil {
			continue
		}
		if at := r.Meta().StartedAt; at.After(bestAt) {
			best, bestAt = id, at
		}
		r.Close()
	}
	return sessionPath(home, best)
}

// stamp is the time part of an id, "" when id does not have one.
func stamp(id string) string {
	s, _, ok := strings.Cut(id, "-")
	if !ok {
		return ""
	}
	return s
}

// sessionsDir is where Create puts session files.
func sessionsDir(home string) string { return filepath.Join(home, "sessions") }

// sessionPath is the file of session id.
func sessionPath(home, id string) string { return filepath.Join(sessionsDir(home), id+".db") }

// ids lists the session ids in home, sorted; a missing directory holds none.
func ids(home string) ([]string, error) {
	entries, err := os.ReadDir(sessionsDir(home))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".db"); ok && !e.IsDir() {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// List returns every session in home, newest first. A file that cannot be
// read is listed with ID, Path and Error set instead of failing the list.
func List(home string) ([]Meta, error) {
	ids, err := ids(home)
	if err != nil {
		return nil, err
	}
	out := make([]Meta, 0, len(ids))
	for _, id := range ids {
		path := sessionPath(home, id)
		r, err := Open(path)
		if err != nil {
			m := Meta{ID: id, Path: path, Error: err.Error()}
			if t, err := time.Parse("20060102T150405", stamp(id)); err == nil {
				m.StartedAt = t
			}
			out = append(out, m)
			continue
		}
		out = append(out, r.Meta())
		r.Close()
	}
	slices.SortStableFunc(out, func(a, b Meta) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out, nil
}
