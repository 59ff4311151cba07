package agent

// The generic profile stands for every agent polygraph has no profile of:
// one that logs polygraph's plain JSONL (docs/transcript-jsonl.md) or OTel
// GenAI spans, naming itself in them, and the agents known by name only.
// What it holds is shared by agents or belongs to no one profile.
func init() {
	register(&Profile{
		Name:    "generic",
		Title:   "other agents",
		Generic: true,
		Formats: []string{"jsonl", "otel"},
		// Known by program name: without a transcript, their processes stand
		// in for the agent.
		Programs: []string{"opencode", "aider", "cursor-agent", "copilot", "goose", "amp"},
		// .agents: the cross-agent directory (skills, shared instructions).
		ConfigDirs: []string{".agents"},
		// The ignore files every agent's file search honours.
		InstructionFiles: []string{".gitignore", ".ignore", ".rgignore"},
		Credentials: []File{
			{Path: "~/.config/github-copilot/**", Clients: []string{"copilot", "code", "node"}},
			{Path: "~/.local/share/opencode/auth.json", Clients: []string{"opencode"}},
			{Path: "~/.config/opencode/**", Clients: []string{"opencode"}, Severity: "medium"},
			{Path: "~/.cursor/**", Clients: []string{"cursor*"}, Severity: "medium"},
		},
		Hosts: []Host{
			// Amazon Bedrock (Claude Code with CLAUDE_CODE_USE_BEDROCK, and others).
			{Name: "bedrock-runtime.*.amazonaws.com", Role: ModelAPI, Egress: true},
			// A router many agents can be pointed at; the user's choice.
			{Name: "openrouter.ai", Role: ModelAPI},
		},
	})
}
