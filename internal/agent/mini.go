package agent

// mini-swe-agent (the SWE-agent team's minimal agent): a Python package,
// minisweagent, that its `mini` script or `python -m minisweagent.run.mini`
// runs. It runs every action itself with subprocess (/bin/sh -c, no
// wrapper), reads no project instruction files, has no sandbox of its own
// (only limits and a confirmation mode, in its settings) and talks to
// whichever model API litellm is configured for, so its profile has none
// of those.
func init() {
	register(&Profile{
		Name:     "mini-swe-agent",
		Title:    "mini-swe-agent",
		Formats:  []string{"mini-swe-agent"},
		Programs: []string{"mini"},
		Modules:  []string{"minisweagent.run.mini"},
		Installs: []string{"/minisweagent/"},
		Transcripts: []Location{{
			// One document, rewritten whole after every step, in its global
			// config directory, or where -o/--output says.
			Roots:       []string{"~/.config/mini-swe-agent", "$MSWEA_GLOBAL_CONFIG_DIR"},
			Globs:       []string{"last_mini_run.traj.json"},
			OutputFlags: []string{"-o", "--output"},
			// It records its working directory only when configured to.
			AnyCwd: true,
		}},
		// The directory of its configuration, and its package.
		Tokens: []string{"mini-swe-agent", "minisweagent"},
		Credentials: []File{
			// Its API keys, as `mini-extra config` writes them.
			{Path: "~/.config/mini-swe-agent/.env", Clients: []string{"mini"}},
		},
		// What bounds it: the .env also holds its settings (the mode that
		// asks before each action, cost tracking), and mini.yaml its
		// agent configuration (step and cost limits, the command
		// templates it runs).
		SandboxSettings: []File{
			{Path: "~/.config/mini-swe-agent/.env", Clients: []string{"mini", "mini-extra"}, Severity: "high"},
			{Path: "~/.config/mini-swe-agent/mini.yaml", Clients: []string{"mini", "mini-extra"}, Severity: "high"},
		},
	})
}
