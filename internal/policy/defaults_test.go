package policy

import (
	"slices"
	"testing"
)

// The built-in agent lists as they stood before they were drawn from the
// agent profiles (internal/agent): the profiles must give exactly these,
// in this order, so that no default allows or flags anything it did not.
// Since then an agent profile has been added, mini-swe-agent's, with its
// entries marked so.

var wasModelAPIs = []string{
	// Anthropic (Claude Code)
	"api.anthropic.com:443", "console.anthropic.com:443", "claude.ai:443", "statsig.anthropic.com:443",
	// OpenAI (Codex CLI)
	"api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443", "ab.chatgpt.com:443",
	// Google (Gemini CLI)
	"generativelanguage.googleapis.com:443", "cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443",
	"aiplatform.googleapis.com:443", "*-aiplatform.googleapis.com:443", "play.googleapis.com:443",
	// Amazon Bedrock
	"bedrock-runtime.*.amazonaws.com:443",
}

var wasAgentConfigPaths = []PathRule{
	{Path: "!~/.claude/shell-snapshots/**"},
	{Path: "!~/.codex/shell_snapshots/**"},
	{Path: "~/.claude/.credentials.json", Clients: []string{"claude"}},
	{Path: "~/.claude.json", Clients: []string{"claude"}},
	{Path: "~/.claude.json.backup*", Clients: []string{"claude"}},
	{Path: "~/.claude/**", Clients: []string{"claude"}, Severity: "medium"},
	{Path: "~/.codex/auth.json", Clients: []string{"codex"}},
	{Path: "~/.codex/**", Clients: []string{"codex"}, Severity: "medium"},
	{Path: "~/.gemini/oauth_creds.json", Clients: []string{"gemini"}},
	{Path: "~/.gemini/google_accounts.json", Clients: []string{"gemini"}},
	{Path: "~/.gemini/.env", Clients: []string{"gemini"}},
	{Path: "~/.gemini/**", Clients: []string{"gemini"}, Severity: "medium"},
	{Path: "~/.config/mini-swe-agent/.env", Clients: []string{"mini"}}, // mini-swe-agent's profile
	{Path: "~/.config/github-copilot/**", Clients: []string{"copilot", "code", "node"}},
	{Path: "~/.local/share/opencode/auth.json", Clients: []string{"opencode"}},
	{Path: "~/.config/opencode/**", Clients: []string{"opencode"}, Severity: "medium"},
	{Path: "~/.cursor/**", Clients: []string{"cursor*"}, Severity: "medium"},
}

var wasTamperPaths = []PathRule{
	{Path: "~/.claude/settings.json", Clients: []string{"claude"}, Severity: "high"},
	{Path: "~/.claude/settings.local.json", Clients: []string{"claude"}, Severity: "high"},
	{Path: "~/.claude.json", Clients: []string{"claude"}, Severity: "high"},
	{Path: "/etc/claude-code/managed-settings.json", Severity: "high"},
	{Path: ".claude/settings.json", Clients: []string{"claude"}, Severity: "medium"},
	{Path: ".claude/settings.local.json", Clients: []string{"claude"}, Severity: "medium"},
	{Path: "~/.codex/config.toml", Clients: []string{"codex"}, Severity: "high"},
	{Path: "/etc/codex/**", Severity: "high"},
	{Path: ".codex/config.toml", Clients: []string{"codex"}, Severity: "medium"},
	{Path: "~/.gemini/settings.json", Clients: []string{"gemini"}, Severity: "high"},
	{Path: "~/.gemini/.env", Clients: []string{"gemini"}, Severity: "high"},
	{Path: "/etc/gemini-cli/**", Severity: "high"},
	{Path: ".gemini/settings.json", Clients: []string{"gemini"}, Severity: "medium"},
	{Path: ".gemini/.env", Clients: []string{"gemini"}, Severity: "medium"},
	// Added with issue 25: mini-swe-agent's settings and agent configuration.
	{Path: "~/.config/mini-swe-agent/.env", Clients: []string{"mini", "mini-extra"}, Severity: "high"},
	{Path: "~/.config/mini-swe-agent/mini.yaml", Clients: []string{"mini", "mini-extra"}, Severity: "high"},
}

var wasAgentPrograms = []string{"claude", "codex", "gemini", "mini" /* mini-swe-agent's profile */, "opencode", "aider", "cursor-agent", "copilot", "goose", "amp"}

var wasEndpointVars = []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL",
	"OPENAI_BASE_URL", "OPENAI_API_BASE", "GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"}

// TestAgentDefaultsUnchanged checks the lists drawn from the agent
// profiles against the lists they replaced.
func TestAgentDefaultsUnchanged(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"DefaultModelAPIs", DefaultModelAPIs, wasModelAPIs},
		{"DefaultAgentConfigPaths", DefaultAgentConfigPaths, wasAgentConfigPaths},
		{"DefaultTamperPaths", DefaultTamperPaths[:len(DefaultTamperPaths)-len(PolygraphPaths)], wasTamperPaths}, // polygraph's own follow
		{"DefaultAgentPrograms", DefaultAgentPrograms, wasAgentPrograms},
		{"AgentEndpointVars", AgentEndpointVars, wasEndpointVars},
	} {
		if !equalDefaults(c.got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, c.got, c.want)
		}
	}
}

func equalDefaults(a, b any) bool {
	switch x := a.(type) {
	case []string:
		return slices.Equal(x, b.([]string))
	case []PathRule:
		return slices.EqualFunc(x, b.([]PathRule), func(p, q PathRule) bool {
			return p.Path == q.Path && p.Severity == q.Severity && slices.Equal(p.Clients, q.Clients)
		})
	}
	return false
}
