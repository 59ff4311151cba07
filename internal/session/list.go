package session

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
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
// of exactly one id. Ids are looked up in every directory of Dirs(home).
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
	all, err := stored(home)
	if err != nil {
		return "", err
	}
	if ref == "last" {
		if len(all) == 0 {
			return "", fmt.Errorf("%w last: no sessions in %s", ErrNoSession, strings.Join(Dirs(home), " or "))
		}
		return newest(all), nil
	}
	var matches []file
	for _, f := range all {
		if f.id == ref {
			return f.path, nil
		}
		if strings.HasPrefix(f.id, ref) {
			matches = append(matches, f)
		}
	}
	switch len(matches) {
	case 0:
		if st, err := os.Stat(ref); err == nil && !st.IsDir() {
			return filepath.Abs(ref) // a file in the working directory
		}
		return "", fmt.Errorf("%w %s (see `polygraph sessions`)", ErrNoSession, ref)
	case 1:
		return matches[0].path, nil
	}
	ids := make([]string, len(matches))
	for i, m := range matches {
		ids[i] = m.id
	}
	return "", &AmbiguousError{Prefix: ref, Matches: ids}
}

// newest returns the path of the session that started last. Ids begin
// with the start time to the second, so only sessions sharing the newest
// second need their metadata read.
func newest(all []file) string {
	top := all[len(all)-1]
	best, bestAt := top.path, time.Time{}
	for _, f := range all {
		if stamp(f.id) != stamp(top.id) {
			continue
		}
		r, err := Open(f.path)
		if err != nil {
			continue
		}
		if at := r.Meta().StartedAt; at.After(bestAt) {
			best, bestAt = f.path, at
		}
		r.Close()
	}
	return best
}

// stamp is the time part of an id, "" when id does not have one.
func stamp(id string) string {
	s, _, ok := strings.Cut(id, "-")
	if !ok {
		return ""
	}
	return s
}

// sessionsDir is where Create puts session files, but for the sudo store.
func sessionsDir(home string) string { return filepath.Join(home, "sessions") }

// file is a session file found in one of a home's directories.
type file struct{ id, path string }

// stored lists the session files of home in every directory of
// Dirs(home), sorted by id; a missing directory holds none, and so does
// one the user may not read (another user's, or a sudo store made before
// this one's rules), with a debug note.
func stored(home string) ([]file, error) {
	var out []file
	for i, dir := range Dirs(home) {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			if i < len(Dirs(home))-1 && errors.Is(err, fs.ErrPermission) {
				slog.Debug("session: cannot list the sudo store", "dir", dir, "error", err)
				continue
			}
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, e := range entries {
			if id, ok := strings.CutSuffix(e.Name(), ".db"); ok && !e.IsDir() {
				out = append(out, file{id, filepath.Join(dir, e.Name())})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b file) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

// List returns every session in home, newest first. A file that cannot be
// read is listed with ID, Path and Error set instead of failing the list.
func List(home string) ([]Meta, error) {
	all, err := stored(home)
	if err != nil {
		return nil, err
	}
	out := make([]Meta, 0, len(all))
	for _, f := range all {
		r, err := Open(f.path)
		if err != nil {
			m := Meta{ID: f.id, Path: f.path, Error: err.Error()}
			if t, err := time.Parse("20060102T150405", stamp(f.id)); err == nil {
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
