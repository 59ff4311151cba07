package agent

// Claude Code (Anthropic), installed from npm (@anthropic-ai/claude-code,
// a native binary inside the package nowadays) or natively under
// ~/.local/share/claude/versions/.
func init() {
	register(&Profile{
		Name:     "claude-code",
		Title:    "Claude Code",
		Formats:  []string{"claude-code", "claude-stream-json"},
		Programs: []string{"claude"},
		Installs: []string{"/node_modules/@anthropic-ai/claude-code/", "/.local/share/claude/versions/"},
		Wrappers: []Wrapper{
			// It captures the user's shell into ~/.claude/shell-snapshots/
			// once per session (Codex writes the same header).
			{Name: "shell-snapshot", Role: Helper, Contains: []string{"# Snapshot file"}},
			// Every Bash call: bash -c "source ~/.claude/shell-snapshots/… &&
			// … && eval '<command>'".
			{Name: "snapshot-eval", Role: Carrier, Prefix: "source ", Contains: []string{"/shell-snapshots/", "eval '"}},
		},
		Transcripts: []Location{{
			Roots: []string{"~/.claude/projects"},
			Globs: []string{"*/*.jsonl", "*/*/subagents/*.jsonl"}, // <project>/<session>.jsonl, its subagents'
		}},
		ConfigDirs: []string{".claude"},
		// cc-socks: the proxy socket of its sandbox.
		Tokens:           []string{"claude", "anthropic", "cc-socks"},
		InstructionFiles: []string{"CLAUDE.md", "CLAUDE.local.md", ".mcp.json", ".claudeignore"},
		Credentials: []File{
			{Path: "!~/.claude/shell-snapshots/**"},
			{Path: "~/.claude/.credentials.json", Clients: []string{"claude"}},
			{Path: "~/.claude.json", Clients: []string{"claude"}},
			{Path: "~/.claude.json.backup*", Clients: []string{"claude"}},
			{Path: "~/.claude/**", Clients: []string{"claude"}, Severity: "medium"},
		},
		SandboxSettings: []File{
			{Path: "~/.claude/settings.json", Clients: []string{"claude"}, Severity: "high"},
			{Path: "~/.claude/settings.local.json", Clients: []string{"claude"}, Severity: "high"},
			{Path: "~/.claude.json", Clients: []string{"claude"}, Severity: "high"},
			{Path: "/etc/claude-code/managed-settings.json", Severity: "high"},
			{Path: ".claude/settings.json", Clients: []string{"claude"}, Severity: "medium"},
			{Path: ".claude/settings.local.json", Clients: []string{"claude"}, Severity: "medium"},
		},
		Hosts: []Host{
			{Name: "api.anthropic.com", Role: ModelAPI, Egress: true},
			{Name: "console.anthropic.com", Role: SignIn, Egress: true},
			{Name: "claude.ai", Role: SignIn, Egress: true},
			{Name: "statsig.anthropic.com", Role: Telemetry, Egress: true},
		},
		EndpointVars: []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL"},
	})
}
