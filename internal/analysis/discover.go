package analysis

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/transcript"
)

// discover finds the transcript the session's agent wrote (discoverPath)
// and parses it with its subagents; nil when there is none or it cannot
// be read.
func discover(ctx context.Context, meta *manifest.Meta, events []*event.Event) *transcript.Transcript {
	path := discoverPath(ctx, meta, events)
	if path == "" {
		return nil
	}
	tr, err := transcript.ParseFileContext(ctx, path, transcript.Options{})
	if err != nil {
		slog.Warn("could not read the discovered transcript", "path", path, "error", err)
		return nil
	}
	return tr
}

// discoverPath finds the transcript the session's agent wrote (where its
// profile says, below the session's home or another HOME the traced
// processes ran with, or where the traced command told it to): the main
// (non-subagent) file with the most overlap; "" for none.
func discoverPath(ctx context.Context, meta *manifest.Meta, events []*event.Event) string {
	found := Discover(ctx, meta, events)
	found = slices.DeleteFunc(found, func(f transcript.Found) bool { return f.Subagent })
	if len(found) == 0 {
		return ""
	}
	// The latest-starting main file that began inside the session is the
	// agent's; earlier ones may be resumed sessions of another run.
	best := found[len(found)-1]
	for _, f := range found {
		if !f.FirstAt.Before(meta.StartedAt) {
			best = f
			break
		}
	}
	return best.Path
}

// Discover lists the transcripts the session's agent may have written,
// by first time: below the session's home and every HOME its execs ran
// with, at locations rooted at the variables its execs recorded
// (event.Process.Env; never polygraph's own environment, so every
// reader of the session finds the same files), and where its command
// told it to write.
func Discover(ctx context.Context, meta *manifest.Meta, events []*event.Event) []transcript.Found {
	getenv := execEnv(events)
	var found []transcript.Found
	for _, home := range append([]string{meta.Home}, execHomes(events, meta.Home)...) {
		more, err := transcript.DiscoverCommand(ctx, meta.Command, home, getenv, meta.Cwd, meta.StartedAt, meta.EndedAt)
		if err != nil {
			slog.Debug("transcript discovery failed", "home", home, "error", err)
			continue
		}
		for _, f := range more {
			if !slices.ContainsFunc(found, func(g transcript.Found) bool { return g.Path == f.Path }) {
				found = append(found, f)
			}
		}
	}
	if meta.Mode == "demo" && meta.Cwd != "" {
		// The demo's agent writes its transcript in its directory, where
		// no profile looks (cmd/polygraph/cmd_demo.go).
		more, err := transcript.DiscoverFiles(ctx, []string{filepath.Join(meta.Cwd, DemoTranscript)}, meta.StartedAt, meta.EndedAt)
		if err != nil {
			slog.Debug("transcript discovery failed", "path", meta.Cwd, "error", err)
		}
		found = append(found, more...)
	}
	slices.SortStableFunc(found, func(a, b transcript.Found) int { return a.FirstAt.Compare(b.FirstAt) })
	return found
}

// DemoTranscript is the name of the transcript `polygraph demo`'s agent
// writes in the demo's directory (the session's cwd), where discovery
// finds it for a session of mode demo.
const DemoTranscript = "agent-transcript.jsonl"

// execEnv resolves a variable as the session's execs recorded it (the
// first exec that had it set), "" when none did.
func execEnv(events []*event.Event) func(string) string {
	vars := map[string]string{}
	for _, e := range events {
		if e.Kind != event.KindExec || e.Process == nil {
			continue
		}
		for _, kv := range e.Process.Env {
			if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
				if _, seen := vars[k]; !seen {
					vars[k] = v
				}
			}
		}
	}
	return func(name string) string { return vars[name] }
}

// execHomes are the HOMEs the session's exec events recorded other than
// home, in the order they first appear, at most maxHomes: an agent started
// under `env -i HOME=…`, `sudo -u` or a CI runner writes its transcript
// below its own HOME, not polygraph's.
func execHomes(events []*event.Event, home string) []string {
	const maxHomes = 8
	var out []string
	for _, e := range events {
		if e.Kind != event.KindExec || e.Process == nil || e.Process.Home == "" {
			continue
		}
		h := filepath.Clean(e.Process.Home)
		if h == filepath.Clean(home) || h == "/" || !filepath.IsAbs(h) || slices.Contains(out, h) {
			continue
		}
		if out = append(out, h); len(out) == maxHomes {
			break
		}
	}
	return out
}
