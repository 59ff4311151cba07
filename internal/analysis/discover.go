package analysis

import (
	"context"
	"log/slog"
	"slices"

	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

// discover finds the transcript the session's agent wrote (where its
// profile says, or where the traced command told it to): the main
// (non-subagent) file with the most overlap, parsed with its subagents.
func discover(ctx context.Context, meta *session.Meta) *transcript.Transcript {
	found, err := transcript.DiscoverCommand(ctx, meta.Command, meta.Home, meta.Cwd, meta.StartedAt, meta.EndedAt)
	if err != nil {
		slog.Debug("transcript discovery failed", "error", err)
		return nil
	}
	found = slices.DeleteFunc(found, func(f transcript.Found) bool { return f.Subagent })
	if len(found) == 0 {
		return nil
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
	tr, err := transcript.ParseFileContext(ctx, best.Path, transcript.Options{})
	if err != nil {
		slog.Warn("could not read the discovered transcript", "path", best.Path, "error", err)
		return nil
	}
	return tr
}
