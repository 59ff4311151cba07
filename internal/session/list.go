package session

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/polygraph/polygraph/internal/untrusted"
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
// of exactly one id. Ids are looked up in every directory of stores.Dirs(home).
//
// The sudo store comes first: `sudo polygraph run` records there, and
// nothing the user runs can write it, while the user's own directory can
// be written by anything the traced tree left behind. So "last" is the
// newest session of the sudo store whenever it has one, and an id or
// prefix found there wins over the user's directory; a session passed
// over for that is named in a warning. Nor is a file's name trusted for
// its time: "last" goes by each session's own recorded start, and passes
// over a file whose name is not its session's id, or whose name or record
// claims a start after the file was last written (its ctime, which its
// owner cannot set).
func Resolve(home, ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("%w: empty session reference", ErrNoSession)
	}
	if ref != "last" && (strings.ContainsRune(ref, os.PathSeparator) || strings.HasSuffix(ref, ".db")) {
		st, err := os.Stat(ref)
		if err == nil && !st.IsDir() {
			return filepath.Abs(ref)
		}
		if strings.ContainsRune(ref, os.PathSeparator) {
			return "", noFile(ref, st, err)
		}
	}
	all, err := stored(home)
	if err != nil {
		return "", err
	}
	if ref == "last" {
		return last(home, all)
	}
	for _, protected := range []bool{true, false} {
		for _, f := range all {
			if f.id == ref && f.protected == protected {
				return f.path, nil
			}
		}
	}
	var prot, other []file
	for _, f := range all {
		if strings.HasPrefix(f.id, ref) {
			if f.protected {
				prot = append(prot, f)
			} else if why := f.nameLies(); why != "" {
				slog.Warn(fmt.Sprintf("session %s passed over: %s", f.path, why))
			} else {
				other = append(other, f)
			}
		}
	}
	matches := other
	if len(prot) > 0 {
		matches = prot
		if len(prot) == 1 && len(other) > 0 {
			slog.Warn(fmt.Sprintf("session %s is %s, from the protected store; also matching in your own directory, which you (and so anything you ran) can write: %s; give the whole id to use one",
				ref, prot[0].id, strings.Join(ids(other), ", ")))
		}
	}
	switch len(matches) {
	case 0:
		st, err := os.Stat(ref)
		if err == nil && !st.IsDir() {
			return filepath.Abs(ref) // a file in the working directory
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", noFile(ref, st, err)
		}
		return "", fmt.Errorf("%w %s (see `polygraph sessions`)", ErrNoSession, ref)
	case 1:
		return matches[0].path, nil
	}
	return "", &AmbiguousError{Prefix: ref, Matches: ids(matches)}
}

// noFile says why the path ref names no session file: missing, a
// directory, or the real cause (permission denied, for one) of a failed
// look, which "no such file" once hid.
func noFile(ref string, st fs.FileInfo, err error) error {
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("%w %s: a directory, not a session file", ErrNoSession, ref)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w %s: no such file", ErrNoSession, ref)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("session %s: %w", ref, err)
}

// ids lists the files' ids, sorted.
func ids(fs []file) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.id
	}
	slices.Sort(out)
	return out
}

// last returns the path of the newest session: the sudo store's when it
// has one (see Resolve), else the user's directory's.
func last(home string, all []file) (string, error) {
	var prot, other []file
	for _, f := range all {
		switch {
		case f.bad != nil:
		case f.protected:
			prot = append(prot, f)
		default:
			other = append(other, f)
		}
	}
	best, started := newest(prot)
	if best != nil {
		// Looked at, not opened: what the user's directory holds is not
		// to cost this choice anything (a file locked by a process left
		// behind would make each open wait).
		var later *file
		for i, f := range other {
			if f.changed.After(started) && (later == nil || f.changed.After(later.changed)) {
				later = &other[i]
			}
		}
		if later != nil {
			slog.Warn(fmt.Sprintf("last is %s, the newest session of the protected store; %s in your own directory was written after it, but anything you ran can write there: name it to use it",
				best.id, later.path))
		}
		return best.path, nil
	}
	if best, _ = newest(other); best != nil {
		return best.path, nil
	}
	return "", fmt.Errorf("%w last: no readable sessions in %s", ErrNoSession, strings.Join(stores.Dirs(home), " or "))
}

// clockSlack is how far a session's recorded start may be after its
// file's ctime before the file is taken to lie: a clock set back a
// little while recording is not a forger.
const clockSlack = time.Minute

// newest returns the file whose session started last by its own record,
// and that start; nil when no file can be read. Files are opened newest
// ctime first, and only until no file left could have started later
// (an honest file's start is before its ctime), so usually one or two.
func newest(files []file) (*file, time.Time) {
	files = slices.Clone(files)
	slices.SortStableFunc(files, func(a, b file) int { return b.changed.Compare(a.changed) })
	var best *file
	var bestAt time.Time
	for i := range files {
		f := &files[i]
		if best != nil && f.changed.Add(clockSlack).Before(bestAt) {
			break
		}
		if why := f.nameLies(); why != "" {
			slog.Warn(fmt.Sprintf("session %s passed over: %s", f.path, why))
			continue
		}
		r, err := Open(f.path)
		if err != nil {
			continue
		}
		m := r.Meta()
		r.Close()
		switch {
		case m.ID != f.id:
			slog.Warn(fmt.Sprintf("session %s passed over: its name is not the id of the session it holds (%s)", f.path, m.ID))
			continue
		case m.StartedAt.After(f.changed.Add(clockSlack)):
			slog.Warn(fmt.Sprintf("session %s passed over: it records a start at %s, after the file was last written (%s)",
				f.path, m.StartedAt.UTC().Format(time.RFC3339), f.changed.UTC().Format(time.RFC3339)))
			continue
		}
		if best == nil || m.StartedAt.After(bestAt) || m.StartedAt.Equal(bestAt) && f.id > best.id {
			best, bestAt = f, m.StartedAt
		}
	}
	return best, bestAt
}

// nameLies says why f's name cannot be its session's: it claims a start
// after the file was last written. "" when it may be.
func (f file) nameLies() string {
	at, err := time.Parse("20060102T150405", stamp(f.id))
	if err != nil || !at.After(f.changed.Add(clockSlack)) {
		return ""
	}
	return fmt.Sprintf("its name claims a start at %s, after the file was last written (%s)",
		at.UTC().Format(time.RFC3339), f.changed.UTC().Format(time.RFC3339))
}

// stamp is the time part of an id, "" when id does not have one.
func stamp(id string) string {
	s, _, ok := strings.Cut(id, "-")
	if !ok {
		return ""
	}
	return s
}

// file is a session file found in one of a home's directories.
type file struct {
	id, path string
	// protected: in the sudo store, root's, in a directory only root can
	// write (stores.ProtectedDir): nothing the user ran can have written it.
	protected bool
	changed   time.Time // the file's ctime: when it was last written
	bad       error     // not a regular file: listed, never opened
}

// maxDirFiles bounds the entries read from one sessions directory: a
// directory anything can fill must not make every listing take minutes.
// Reaching it is said once.
const maxDirFiles = 100000

// stored lists the session files of home in every directory of
// stores.Dirs(home), sorted by id; a missing directory holds none, and so does
// one the user may not read (another user's, or a sudo store made before
// this one's rules), with a debug note.
func stored(home string) ([]file, error) {
	var out []file
	for _, d := range stores.StoreDirs(home) {
		files, err := listDir(d.Path, d.Sudo && stores.ProtectedDir(d.Path))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			if d.Sudo && errors.Is(err, fs.ErrPermission) {
				slog.Debug("session: cannot list the sudo store", "dir", d.Path, "error", err)
				continue
			}
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, files...)
	}
	slices.SortStableFunc(out, func(a, b file) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

// listDir returns the *.db files of dir. The directory is opened
// non-blocking (a FIFO in its place fails instead of waiting), and each
// entry is looked at, not opened: one that is not a regular file is
// returned with bad set.
func listDir(dir string, protected bool) ([]file, error) {
	d, err := untrusted.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(maxDirFiles + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(entries) > maxDirFiles {
		slog.Warn(fmt.Sprintf("sessions: %s holds more than %d entries; only %d of them are read", dir, maxDirFiles, maxDirFiles))
		entries = entries[:maxDirFiles]
	}
	var out []file
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".db")
		if !ok || e.IsDir() {
			continue
		}
		f := file{id: id, path: filepath.Join(dir, e.Name())}
		st, err := os.Stat(f.path)
		if err != nil {
			continue
		}
		if !st.Mode().IsRegular() {
			f.bad = fmt.Errorf("%w (%s)", ErrNotRegular, fileKind(st.Mode()))
		}
		uid, changed, ok := stores.OwnerAndChange(st)
		f.changed, f.protected = changed, protected && ok && uid == 0
		out = append(out, f)
	}
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
		var r *Reader
		err := fmt.Errorf("open session %s: %w", f.path, f.bad)
		if f.bad == nil {
			r, err = Open(f.path)
		}
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
