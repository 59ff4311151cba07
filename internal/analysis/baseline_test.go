package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/detect"
)

// TestBaselineFlagsAttackNotHonest: a baseline learned from three honest
// sessions flags the one that reads ~/.ssh and contacts a new loopback
// host, and says nothing of another honest one; with too few sessions it
// judges nothing.
func TestBaselineFlagsAttackNotHonest(t *testing.T) {
	home := t.TempDir()
	store := baseline.Open(home)
	var prof *baseline.Profile
	for i, cwd := range honestWorkspaces[:3] {
		sess, tr := variant(t, "claude", cwd, false)
		smp, err := Observe(t.Context(), Options{SessionPath: sess, Transcript: tr})
		if err != nil {
			t.Fatal(err)
		}
		if prof == nil {
			prof = &baseline.Profile{Agent: smp.Agent, Version: smp.Version}
		}
		if !prof.Add(smp, time.Now()) {
			t.Fatal("a new session was not learned")
		}
		if prof.Add(smp, time.Now()) {
			t.Error("the same session was learned twice")
		}
		if err := store.Save(prof); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			// Two sessions: too few to judge anything.
			sess, tr := variant(t, "claude", honestWorkspaces[3], true)
			if fs := deviations(t, sess, tr, home); len(fs) != 0 {
				t.Errorf("judged with %d sessions: %v", i+1, fs)
			}
		}
	}
	if prof.Agent != "claude-code" || prof.Version == "" {
		t.Errorf("profile of %q version %q", prof.Agent, prof.Version)
	}
	sess, tr := variant(t, "claude", honestWorkspaces[3], false)
	if fs := deviations(t, sess, tr, home); len(fs) != 0 {
		t.Errorf("honest session flagged: %v", fs)
	}
	sess, tr = variant(t, "claude", honestWorkspaces[3], true)
	fs := deviations(t, sess, tr, home)
	var host, ssh bool
	for _, f := range fs {
		t.Logf("%s %s: %s", f.Severity, f.Title, f.Detail)
		host = host || strings.Contains(f.Title, "127.0.0.9:4444") && f.Severity == detect.SeverityMedium
		ssh = ssh || strings.Contains(f.Title, "~/.ssh/id_rsa") && f.Severity == detect.SeverityMedium
		if f.ToolCallID == "" {
			t.Errorf("deviation not tied to the hijacked call: %s", f.Title)
		}
	}
	if !host || !ssh {
		t.Errorf("attack: new host flagged %v, ~/.ssh read flagged %v: %v", host, ssh, fs)
	}
}

// deviations reports the session with the baseline in home and returns
// its baseline-deviation findings.
func deviations(t *testing.T, sess, tr, home string) []detect.Finding {
	t.Helper()
	rep, err := Run(t.Context(), Options{SessionPath: sess, Transcript: tr, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	var out []detect.Finding
	if n := strings.Join(rep.Notes, "\n"); !strings.Contains(n, "judged against the baseline claude-code@") {
		t.Errorf("the report does not say which baseline judged it: %q", n)
	}
	for _, f := range rep.Findings {
		if f.Rule == "baseline-deviation" {
			out = append(out, f)
		}
	}
	return out
}
