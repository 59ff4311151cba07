package analysis

import (
	"context"
	"fmt"

	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

// loadBaseline returns the baseline profile of the session's agent in the
// polygraph home home: nil when home is "" or has none.
func loadBaseline(home string, tr *transcript.Transcript, meta session.Meta) (*baseline.Profile, error) {
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
	pol := o.Policy
	if pol == nil {
		pol = policy.Default()
	}
	rec, err := readSession(ctx, o.SessionPath)
	if err != nil {
		return nil, err
	}
	tr, err := findTranscript(ctx, o.Transcript, rec.meta, rec.events)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	attr := correlate.Attribute(rec.events, tr, *rec.meta, correlate.Options{})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("observe %s: %w", o.SessionPath, err)
	}
	return detect.Observe(detect.Input{Events: rec.events, Transcript: tr, Attribution: attr, Meta: *rec.meta, Policy: pol}), nil
}
