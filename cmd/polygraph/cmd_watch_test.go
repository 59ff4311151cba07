package main

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/watch"
)

func TestWatchReady(t *testing.T) {
	got := watchReady([]watch.Target{{Path: "/h/.claude", Agent: "claude-code"}, {Path: "/h/.codex/auth.json", Agent: "codex"},
		{Path: "/h/.claude.json", Agent: "claude-code"}}, "/var/lib/polygraph/sessions", "stdout")
	for _, want := range []string{"polygraph watch: ready: recording every agent that starts (claude, codex, ",
		") into /var/lib/polygraph/sessions; guarding 3 stores of claude-code, codex; findings to stdout (Ctrl-C to stop)"} {
		if !strings.Contains(got, want) {
			t.Errorf("ready line %q lacks %q", got, want)
		}
	}
	if got := watchReady(nil, "/s", "f.jsonl"); !strings.Contains(got, "; no agent store found to guard; findings to f.jsonl") {
		t.Errorf("with no store: %q", got)
	}
}
