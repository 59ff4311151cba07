package policy

import (
	"path"
	"strings"
)

// What a directory holds. A mount of a directory shows its files under
// another path: the rules ask whether the directory is a credential
// store's own (~/.aws, ~/.ssh, ~/.config/gcloud), which no pattern
// matches, since the patterns name files.

// baseDirs are the directories every program keeps its files in: one of
// them holding a credential file (~/.config/hub) makes it no store.
var baseDirs = []string{"~", "~/.config", "~/.local", "~/.local/share", "~/.cache", "/", "/etc", "/home", "/root", "/tmp", "/var"}

// Dir returns the entry whose files lie in directory dir itself: an
// entry naming a file there (~/.aws/credentials for ~/.aws), or the
// entry of a tree rooted there (~/.ssh/** for ~/.ssh). Entries that match
// at any depth (.env) name no directory; the base directories (a home,
// ~/.config, ~/.cache, ~/.local/share, /) are no store, whatever they hold.
func (s *PathSet) Dir(dir, home string) (PathRule, bool) {
	if s == nil || BaseDir(dir, home) {
		return PathRule{}, false
	}
	dir = strings.TrimRight(dir, "/")
	h, _ := homeForm(dir+"/", home)
	h = strings.TrimRight(h, "/")
	for i, in := range s.include {
		d := in.dir()
		if d != "" && (d == dir || d == h) {
			return s.rules[s.idx[i]], true
		}
	}
	return PathRule{}, false
}

// BaseDir reports whether dir is one of the directories every program
// keeps its files in (a home, ~/.config, ~/.cache, ~/.local/share, /,
// /etc, /tmp, /var, /home), home being the session's: no store, whatever
// it holds.
func BaseDir(dir, home string) bool {
	dir = strings.TrimRight(dir, "/")
	if dir == "" {
		return true
	}
	h, _ := homeForm(dir+"/", home)
	h = strings.TrimRight(h, "/")
	for _, b := range baseDirs {
		if dir == b || h == b {
			return true
		}
	}
	return false
}

// dir is the directory the pattern's matches lie in, or whose tree they
// lie in: the literal text before its first wildcard, up to its last
// slash; "" for a pattern that matches at any depth.
func (pp *pathPattern) dir() string {
	if pp.exact {
		return path.Dir(pp.prefix)
	}
	i := strings.LastIndexByte(pp.prefix, '/')
	if i <= 0 {
		return ""
	}
	return pp.prefix[:i]
}

// SensitiveDir returns the sensitive entry whose files lie in directory
// dir itself (PathSet.Dir).
func (p *Policy) SensitiveDir(dir, home string) (PathRule, bool) { return p.sensitive.Dir(dir, home) }
