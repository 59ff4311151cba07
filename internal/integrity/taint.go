package integrity

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// A trusted source is only as good as what wrote it. A traced tree that
// rewrites a package's md5sums, or polygraph's own pin or first-seen file,
// blesses whatever it likes for every later session: the write is
// recorded (and judged) in its own session, and the session's check
// remembers it here, in the store, once the tree is done. A later checker
// does not trust a source file still as that session left it (same
// inode, size and modification time); dpkg reinstalling the package, or
// `polygraph integrity pin`, replaces the file and ends the taint.

// TaintFile is the store's record of trusted-source files a traced
// session wrote.
const TaintFile = "tainted.json"

// Taint is one trusted-source file a traced session wrote, as it stood
// when the session ended.
type Taint struct {
	Session string    `json:"session,omitempty"`
	At      time.Time `json:"at"`
	Dev     uint64    `json:"dev"`
	Ino     uint64    `json:"ino"`
	Size    int64     `json:"size"`
	MtimeNs int64     `json:"mtime_ns"`
}

type taintDoc struct {
	Version int              `json:"version"`
	Files   map[string]Taint `json:"files"`
}

// Taints reads the taint file; a missing file is none.
func (s *Store) Taints() (map[string]Taint, error) {
	var d taintDoc
	if err := s.read(TaintFile, &d); err != nil {
		return nil, err
	}
	if d.Files == nil {
		d.Files = map[string]Taint{}
	}
	return d.Files, nil
}

// AddTaints records files (path: taint) under the lock, dropping entries
// whose file is gone or was replaced since.
func (s *Store) AddTaints(add map[string]Taint) error {
	return s.locked(func() error {
		m, err := s.Taints()
		if err != nil {
			return err
		}
		for p, t := range m {
			if !t.holds(p) {
				delete(m, p)
			}
		}
		for p, t := range add {
			m[p] = t
		}
		return s.write(TaintFile, taintDoc{Version: 1, Files: m})
	})
}

// taintOf is the taint of path as it stands now.
func taintOf(path, session string, now time.Time) (Taint, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return Taint{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Taint{}, false
	}
	return Taint{Session: session, At: now, Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, MtimeNs: st.Mtim.Nano()}, true
}

// holds reports whether path is still the file the taint describes.
func (t Taint) holds(path string) bool {
	now, ok := taintOf(path, "", time.Time{})
	return ok && now.Dev == t.Dev && now.Ino == t.Ino && now.Size == t.Size && now.MtimeNs == t.MtimeNs
}

// reason says why a source file is not trusted.
func (t Taint) reason(what string) string {
	by := "a traced session"
	if t.Session != "" {
		by = "session " + t.Session
	}
	return fmt.Sprintf("%s was rewritten by %s (%s) and not replaced since: not trusted", what, by, t.At.UTC().Format(time.RFC3339))
}

// taintWatch collects, from a session's events, the trusted-source files
// the traced tree wrote: dpkg's md5sums and status, the store's pin and
// first-seen files.
type taintWatch struct {
	dpkgDir string
	store   string // the store's directory ("" without one)

	mu    sync.Mutex
	paths map[string]bool
}

// trustSource reports whether p is a file a verdict rests on.
func (w *taintWatch) trustSource(p string) bool {
	switch {
	case filepath.Dir(p) == w.dpkgDir && strings.HasSuffix(p, ".md5sums"):
		return true
	case p == filepath.Join(filepath.Dir(w.dpkgDir), "status"):
		return true
	case w.store != "" && (p == filepath.Join(w.store, PinsFile) || p == filepath.Join(w.store, SeenFile)):
		return true
	}
	return false
}

// observe takes one event of the session.
func (w *taintWatch) observe(ev *event.Event) {
	if w == nil || ev.Failed() {
		return
	}
	var p string
	switch ev.Kind {
	case event.KindOpen:
		if ev.IsWrite() {
			p = ev.Path
		}
	case event.KindRename, event.KindLink:
		p = ev.Path2 // the name made
	}
	if p == "" || !w.trustSource(p) {
		return
	}
	w.mu.Lock()
	if w.paths == nil {
		w.paths = map[string]bool{}
	}
	w.paths[p] = true
	w.mu.Unlock()
}

// taints are the files written, as they stand now.
func (w *taintWatch) taints(session string, now time.Time) map[string]Taint {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]Taint{}
	for p := range w.paths {
		if t, ok := taintOf(p, session, now); ok {
			out[p] = t
		}
	}
	return out
}
