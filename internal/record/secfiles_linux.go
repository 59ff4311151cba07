package record

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/sensor"
)

// maxSecDirs bounds the subdirectories one "dir/**" pattern adds, so a
// home with a huge ~/.config cannot fill the kernel's map.
const maxSecDirs = 256

// markSensitive tells the sensor the files and directories of the
// policy's sensitive, agent-config, persistence and privilege paths that
// exist now, under every /home/*, /root and home: their opens go to the
// security ring, which a storm of ordinary opens cannot overflow. A
// pattern names a file, a directory ("dir/*", "dir/**": the directory,
// and for "**" its subdirectories), or nothing this can name (a glob
// inside a component, a pattern with no literal start: skipped; such
// opens stay in the main ring).
func markSensitive(s *sensor.Sensor, home string) {
	p := policy.Default()
	homes := []string{"/root"}
	if home != "" {
		homes = append(homes, home)
	}
	if m, err := filepath.Glob("/home/*"); err == nil {
		homes = append(homes, m...)
	}
	var paths []string
	for _, list := range [][]policy.PathRule{p.SensitivePaths, p.AgentConfigPaths, p.PersistencePaths, p.PrivilegePaths} {
		for _, r := range list {
			paths = append(paths, secPaths(r.Path, homes)...)
		}
	}
	n := s.MarkSensitive(paths)
	slog.Debug("sensitive files marked for the security ring", "candidates", len(paths), "marked", n)
}

// secPaths expands one pattern into the paths whose identity marks it.
func secPaths(pat string, homes []string) []string {
	if strings.HasPrefix(pat, "!") {
		return nil
	}
	var roots []string
	if rest, ok := strings.CutPrefix(pat, "~/"); ok {
		for _, h := range homes {
			roots = append(roots, filepath.Join(h, rest))
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

// subdirs lists up to maxSecDirs directories under dir.
func subdirs(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || len(out) >= maxSecDirs {
			return filepath.SkipDir
		}
		if d.IsDir() && p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out
}
