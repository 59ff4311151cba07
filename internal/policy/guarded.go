package policy

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/polygraph/polygraph/internal/accounts"
)

// maxGuardedDirs bounds the subdirectories one "dir/**" pattern adds, so a
// home with a huge ~/.config cannot fill the kernel's map.
const maxGuardedDirs = 256

// GuardedPaths lists the files and directories of the policy's sensitive,
// agent-config, persistence and privilege paths that exist now, with "~/"
// read as each of homes: the sensor routes their opens, by the file's
// identity, to its security ring, which a storm of ordinary opens cannot
// overflow. A pattern names a file, a directory ("dir/*", "dir/**": the
// directory, and for "**" its subdirectories), or nothing this can name (a
// glob inside a component, a pattern with no literal start: skipped; such
// opens stay in the main ring and the rules still see them).
func (p *Policy) GuardedPaths(homes []string) []string {
	var out []string
	for _, list := range [][]PathRule{p.SensitivePaths, p.AgentConfigPaths, p.PersistencePaths, p.PrivilegePaths} {
		for _, r := range list {
			out = append(out, guardedPaths(r.Path, homes)...)
		}
	}
	return out
}

// SecretPaths are the paths of the credential files and directories of
// homes that exist now (sensitive and agent-config entries), with "~/"
// read as each home: what a session records by identity (manifest.Secret).
func (p *Policy) SecretPaths(homes []string) []string {
	var out []string
	for _, list := range [][]PathRule{p.SensitivePaths, p.AgentConfigPaths} {
		for _, r := range list {
			out = append(out, guardedPaths(r.Path, homes)...)
		}
	}
	return out
}

// guardedPaths expands one pattern into the paths whose identity marks it.
func guardedPaths(pat string, homes []string) []string {
	if strings.HasPrefix(pat, "!") {
		return nil
	}
	var roots []string
	if strings.HasPrefix(pat, "~/") {
		for _, h := range homes {
			if p, ok := accounts.InHome(pat, h); ok {
				roots = append(roots, p)
			}
		}
	} else if strings.HasPrefix(pat, "/") {
		roots = []string{pat}
	} else {
		return nil
	}
	var out []string
	for _, r := range roots {
		i := strings.IndexAny(r, "*?[")
		if i < 0 {
			out = append(out, r)
			continue
		}
		dir := r[:i]
		if !strings.HasSuffix(dir, "/") || len(dir) < 2 {
			continue // a glob inside a component
		}
		dir = strings.TrimSuffix(dir, "/")
		out = append(out, dir)
		if strings.HasPrefix(r[i:], "**") {
			out = append(out, subdirs(dir)...)
		}
	}
	return out
}

// subdirs lists up to maxGuardedDirs directories under dir.
func subdirs(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || len(out) >= maxGuardedDirs {
			return filepath.SkipDir
		}
		if d.IsDir() && p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out
}
