package record

import (
	"slices"
	"testing"

	"github.com/polygraph/polygraph/internal/agent"
)

func TestEgressEntry(t *testing.T) {
	for _, tt := range []struct {
		in, ep, name string
		ok           bool
	}{
		{"api.anthropic.com", "", "api.anthropic.com", true},
		{"API.Example.com.:443", "", "api.example.com", true},
		{"127.0.0.1:8080", "127.0.0.1:8080", "", true},
		{"[::1]:8080", "[::1]:8080", "", true},
		{"10.1.2.3", "10.1.2.3:*", "", true},
		{"10.1.2.3/32:443", "10.1.2.3:443", "", true},
		{"10.0.0.0/8", "", "", false},
		{"*.googleapis.com", "", "", false},
		{"host:notaport", "", "", false},
	} {
		ep, name, ok := egressEntry(tt.in)
		if ok != tt.ok || ok && (name != tt.name || name == "" && ep.String() != tt.ep) {
			t.Errorf("%s: %v %q %v, want %s %q %v", tt.in, ep, name, ok, tt.ep, tt.name, tt.ok)
		}
	}
}

// TestMasks: the running agent's stores are kept, every other agent's
// masked with the credential stores; no agent: all masked.
func TestMasks(t *testing.T) {
	claude, _ := agent.ByName("claude-code")
	mask, keep := masks("/h", claude)
	for _, want := range []string{"/h/.aws", "/h/.ssh", "/h/.codex", "/h/.gemini"} {
		if !slices.Contains(mask, want) {
			t.Errorf("mask lacks %s: %v", want, mask)
		}
	}
	if !slices.Contains(keep, "/h/.claude") || !slices.Contains(keep, "/h/.claude.json") || slices.Contains(mask, "/h/.claude") {
		t.Errorf("claude's own stores: keep %v, mask %v", keep, mask)
	}
	mask, keep = masks("/h", nil)
	if len(keep) != 0 || !slices.Contains(mask, "/h/.claude") {
		t.Errorf("no agent: keep %v, mask %v", keep, mask)
	}
	if got := endpointEntries([]string{"ANTHROPIC_BASE_URL=http://127.0.0.1:8080", "OPENAI_BASE_URL=https://gw.example/v1", "OTHER=http://x:1"}); !slices.Equal(got, []string{"127.0.0.1:8080", "gw.example:443"}) {
		t.Errorf("endpoint entries %v", got)
	}
}
