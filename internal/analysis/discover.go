package analysis

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/transcript"
)

// discover finds the transcript the session's agent wrote (discoverPath)
// and parses it with its subagents; nil when there is none or it cannot
// be read.
func discover(ctx context.Context, meta *manifest.Meta, homes []string) *transcript.Transcript {
	path := discoverPath(ctx, meta, homes)
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
func discoverPath(ctx context.Context, meta *manifest.Meta, homes []string) string {
	var found []transcript.Found
	for _, home := range append([]string{meta.Home}, homes...) {
		more, err := transcript.DiscoverCommand(ctx, meta.Command, home, meta.Cwd, meta.StartedAt, meta.EndedAt)
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
	slices.SortStableFunc(found, func(a, b transcript.Found) int { return a.FirstAt.Compare(b.FirstAt) })
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
