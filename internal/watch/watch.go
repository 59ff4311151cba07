// Package watch is polygraph's system-wide mode: it recognises agent
// processes when they exec and records each agent's tree as its own
// session, and records the opens of agents' credential and config stores
// by processes outside every agent tree (the same-user theft case) in a
// session of their own, the outsiders'. Every session is judged live by
// the same rules as under run (analysis.Live), tuned by the same policy;
// watch has no rule of its own. Findings stream as JSON lines
// (internal/findings). Recording needs Linux (watch_linux.go); the store
// list and retention build anywhere.
package watch

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/accounts"
	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/policy"
)

// ErrNeedsLinux is what Run returns where there is no kernel sensor.
var ErrNeedsLinux = errors.New("watch needs Linux (the sensor is eBPF)")

// Options say where to store sessions, what to watch and where findings go.
type Options struct {
	Home string // session directory root (stores.Home())
	// Homes are the user homes whose agent stores are watched; nil means
	// every home in /etc/passwd and /root.
	Homes []string
	// Out receives the findings stream: one JSON object a line
	// (internal/findings), from every session.
	Out io.Writer
	// Policy tunes the rules (nil: the default policy).
	Policy *policy.Policy
	// Sinks receive every live decision of every session too (an
	// exporter).
	Sinks []analysis.Sink
	// Keep and MaxSize bound the watch sessions kept (Prune); zero keeps all.
	Keep    time.Duration
	MaxSize int64
	// RingBytes is the sensor's event ring size (zero: its default).
	RingBytes int
	// PruneEvery is how often retention runs while watching (zero: hourly).
	PruneEvery time.Duration
	// Ready, when set, is called once the sensor is attached and the
	// stores are watched.
	Ready func(targets []Target)
}

// Target is one watched file or directory of an agent's store.
type Target struct {
	Path     string
	Agent    string // profile name
	Dir      bool
	Dev, Ino uint64
}

// Targets lists the agents' credential and config stores that exist under
// homes: every profile's credential files (globs expanded; a "/**" pattern
// names its directory) and config directories. Workspace-relative entries
// are skipped: there is no workspace system-wide.
func Targets(homes []string) []Target {
	var out []Target
	seen := map[string]bool{}
	add := func(p *agent.Profile, path string) {
		if seen[path] {
			return
		}
		fi, err := os.Stat(path)
		if err != nil {
			return
		}
		seen[path] = true
		t := Target{Path: path, Agent: p.Name, Dir: fi.IsDir()}
		t.Dev, t.Ino = fileID(fi)
		out = append(out, t)
	}
	for _, p := range agent.All() {
		for _, home := range homes {
			for _, f := range p.Credentials {
				if strings.HasPrefix(f.Path, "!") {
					continue
				}
				for _, path := range expand(f.Path, home) {
					add(p, path)
				}
			}
			for _, d := range p.ConfigDirs {
				add(p, filepath.Join(home, d))
			}
		}
	}
	// Files before directories: the most specific target wins a match.
	slices.SortStableFunc(out, func(a, b Target) int {
		switch {
		case a.Dir == b.Dir:
			return 0
		case b.Dir:
			return -1
		}
		return 1
	})
	return out
}

// expand turns a profile path into the existing paths it names under home.
func expand(pat, home string) []string {
	if p, ok := accounts.InHome(pat, home); ok {
		pat = p
	} else if !filepath.IsAbs(pat) {
		return nil
	}
	pat = strings.TrimSuffix(pat, "/**")
	if !strings.ContainsAny(pat, "*?[") {
		return []string{pat}
	}
	m, _ := filepath.Glob(pat)
	return m
}

// match returns the target an opened path falls under: the file itself,
// or the watched directory it is directly in.
func match(targets []Target, path string) (Target, bool) {
	dir := filepath.Dir(path)
	for _, t := range targets {
		if t.Path == path || t.Dir && t.Path == dir {
			return t, true
		}
	}
	return Target{}, false
}
