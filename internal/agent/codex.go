package agent

// Codex CLI (OpenAI): npm's @openai/codex starts a native binary from a
// platform package (@openai/codex-linux-x64), which re-executes itself
// through /proc/self/exe to set up its sandbox.
func init() {
	register(&Profile{
		Name:     "codex",
		Title:    "Codex CLI",
		Formats:  []string{"codex"},
		Programs: []string{"codex"},
		Installs: []string{"/node_modules/@openai/codex/", "/node_modules/@openai/codex-"},
		Wrappers: []Wrapper{
			{Name: "shell-snapshot", Role: Helper, Contains: []string{"# Snapshot file"}},
			// It checks a snapshot sources cleanly: sh -c 'set -e; . <snapshot>'
			// (either spelling of the snapshot directory).
			{Name: "shell-snapshot", Role: Helper, Prefix: "set -e; . ", Contains: []string{"shell_snapshots"}},
			{Name: "shell-snapshot", Role: Helper, Prefix: "set -e; . ", Contains: []string{"shell-snapshots"}},
			// /proc/self/exe --codex-run-as-process-setup … /bin/bash -c <command>:
			// sets up the sandbox, then execs the command.
			{Name: "sandbox-setup", Role: Transparent, Flag: "--codex-run-as-process-setup"},
			// Sources the snapshot, restores the variables it overrode, then
			// execs the command.
			{Name: "snapshot-wrapper", Role: Transparent, Contains: []string{"__CODEX_SNAPSHOT_OVERRIDE"}},
		},
		Transcripts: []Location{{
			Roots: []string{"~/.codex/sessions", "$CODEX_HOME/sessions"},
			Globs: []string{"**/rollout-*.jsonl"}, // YYYY/MM/DD/rollout-<time>-<id>.jsonl
		}},
		ConfigDirs:       []string{".codex"},
		Tokens:           []string{"codex", "openai"},
		InstructionFiles: []string{"AGENTS.md", "AGENTS.override.md"},
		Credentials: []File{
			{Path: "!~/.codex/shell_snapshots/**"},
			{Path: "~/.codex/auth.json", Clients: []string{"codex"}},
			{Path: "~/.codex/**", Clients: []string{"codex"}, Severity: "medium"},
		},
		SandboxSettings: []File{
			{Path: "~/.codex/config.toml", Clients: []string{"codex"}, Severity: "high"},
			{Path: "/etc/codex/**", Severity: "high"},
			{Path: ".codex/config.toml", Clients: []string{"codex"}, Severity: "medium"},
		},
		Hosts: []Host{
			{Name: "api.openai.com", Role: ModelAPI, Egress: true},
			{Name: "chatgpt.com", Role: ModelAPI, Egress: true}, // signed in with ChatGPT: /backend-api/codex
			{Name: "auth.openai.com", Role: SignIn, Egress: true},
			{Name: "ab.chatgpt.com", Role: Telemetry, Egress: true},
			// Azure OpenAI: <resource>.openai.azure.com, the user's own.
			{Name: "openai.azure.com", Role: ModelAPI},
		},
		EndpointVars: []string{"OPENAI_BASE_URL", "OPENAI_API_BASE"},
	})
}
