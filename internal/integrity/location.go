package integrity

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// locator classifies where a file sits. PATH lookups are cached per file
// name: a build loop runs the same few names thousands of times.
type locator struct {
	workspaces []string
	temps      []string
	path       []string // PATH's directories, in order

	mu      sync.Mutex
	shadows map[string][]string // base name -> executables of that name on PATH
}

func newLocator(workspaces, temps []string, pathEnv string) *locator {
	l := &locator{shadows: make(map[string][]string)}
	for _, w := range workspaces {
		if w != "" {
			l.workspaces = append(l.workspaces, filepath.Clean(w))
		}
	}
	if temps == nil {
		temps = []string{os.TempDir(), os.Getenv("TMPDIR"), "/tmp", "/var/tmp", "/dev/shm", "/run/user"}
	}
	for _, t := range temps {
		if t != "" {
			l.temps = append(l.temps, filepath.Clean(t))
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if filepath.IsAbs(d) {
			l.path = append(l.path, filepath.Clean(d))
		}
	}
	return l
}

// locate describes path.
func (l *locator) locate(path string) *Location {
	loc := &Location{}
	for _, w := range l.workspaces {
		loc.Workspace = loc.Workspace || under(path, w)
	}
	for _, t := range l.temps {
		loc.Temp = loc.Temp || under(path, t)
	}
	for _, part := range strings.Split(filepath.Dir(path), "/") {
		if strings.EqualFold(part, "downloads") {
			loc.Download = true
		}
	}
	loc.UserWritable = userWritable(path) || userWritable(filepath.Dir(path))
	loc.Shadows = l.shadow(path)
	return loc
}

// shadow returns another executable on PATH with path's name, which a
// lookup of that name would find instead of (or after) path. Only names
// that exist elsewhere on PATH count: a `trivy` nobody installed shadows
// nothing.
func (l *locator) shadow(path string) string {
	base := filepath.Base(path)
	l.mu.Lock()
	found, ok := l.shadows[base]
	if !ok {
		for _, d := range l.path {
			c := filepath.Join(d, base)
			if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				found = append(found, c)
			}
		}
		l.shadows[base] = found
	}
	l.mu.Unlock()
	pi, err := os.Stat(path)
	for _, c := range found {
		if c == path {
			continue
		}
		if ci, cerr := os.Stat(c); err == nil && cerr == nil && os.SameFile(pi, ci) {
			continue // the same file through a symlinked PATH entry
		}
		return c
	}
	return ""
}

// userWritable reports whether a user other than root owns p or may write
// it through its group or world bits. Sticky world-writable directories
// (/tmp) count: anyone can drop a new file there.
func userWritable(p string) bool {
	fi, err := os.Stat(p)
	if err != nil {
		return false
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return true
	}
	uid, ok := ownerUID(fi)
	return ok && uid != 0
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/") || dir == "/"
}
