package integrity

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// locator classifies where a file sits. PATH lookups are cached per file
// name: a build loop runs the same few names thousands of times.
type locator struct {
	workspaces []string
	temps      []string
	path       []string // PATH's directories, in order
	resolved   []string // the same, symlinks resolved (exec paths are)

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
			d = filepath.Clean(d)
			r, err := filepath.EvalSymlinks(d)
			if err != nil {
				r = d
			}
			l.path, l.resolved = append(l.path, d), append(l.resolved, r)
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

// shadow returns the executable of path's name that path hides: one in a
// later PATH directory than path's own, which a lookup of that name would
// have found but for path. Only names that exist further down PATH count
// (a `trivy` nobody installed shadows nothing), and only files in a PATH
// directory: Go's linker, run by its full path from GOROOT/pkg/tool,
// hides no /usr/bin/link from anyone.
func (l *locator) shadow(path string) string {
	base, dir := filepath.Base(path), filepath.Dir(path)
	at := slices.IndexFunc(l.path, func(d string) bool { return d == dir })
	if r := slices.Index(l.resolved, dir); at < 0 || (r >= 0 && r < at) {
		at = r
	}
	if at < 0 {
		return ""
	}
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
		if c == path || !l.after(c, at) {
			continue
		}
		if ci, cerr := os.Stat(c); err == nil && cerr == nil && os.SameFile(pi, ci) {
			continue // the same file through a symlinked PATH entry
		}
		return c
	}
	return ""
}

// after reports whether the executable c sits in a PATH directory after
// the one at index at.
func (l *locator) after(c string, at int) bool {
	d := filepath.Dir(c)
	for i := at + 1; i < len(l.path); i++ {
		if l.path[i] == d {
			return true
		}
	}
	return false
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
