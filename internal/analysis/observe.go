package analysis

import (
	"context"
	"fmt"

	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/transcript"
)

// loadBaseline returns the baseline profile of the session's agent in the
// polygraph home home: nil when home is "" or has none.
func loadBaseline(home string, tr *transcript.Transcript, meta manifest.Meta) (*baseline.Profile, error) {
	if home == "" {
		return nil, nil
	}
	agent, version := detect.AgentOf(tr, meta)
	return baseline.Open(home).Select(agent, version)
}

// baselineNotes tell the report's reader which baseline judged the
// session, so that no baseline-deviation finding means something.
func baselineNotes(p *baseline.Profile) []string {
	if p == nil {
		return nil
	}
	return []string{fmt.Sprintf("judged against the baseline %s (%d sessions; a tool kind needs %d to be judged; docs/baselines.md)",
		p.Key(), len(p.Sessions), baseline.MinSessions)}
}

// Observe reads the session o names as Run does (o.SessionPath is
// required) and returns what it did (detect.Observe): what a baseline or
// an allowlist policy learns from it.
func Observe(ctx context.Context, o Options) (*baseline.Sample, error) {
	if o.SessionPath == "" {
		return nil, ErrNothing
	}
	eng, _, err := Replay(ctx, o.SessionPath, EngineOptions{Policy: o.Policy, Transcript: o.Transcript})
	if err != nil {
		return nil, err
	}
	if o.Loaded != nil {
		o.Loaded()
	}
	meta := eng.Meta()
	tr, err := eng.follow.refresh(ctx, &meta, eng.events, true)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	attr := correlate.Attribute(eng.events, tr, meta, correlate.Options{})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("observe %s: %w", o.SessionPath, err)
	}
	return detect.Observe(detect.Input{Events: attr.Events, Transcript: tr, Attribution: attr, Meta: meta, Policy: eng.o.Policy}), nil
}
