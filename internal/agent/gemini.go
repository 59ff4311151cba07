package agent

// Gemini CLI (Google): node runs npm's @google/gemini-cli bundle.
func init() {
	register(&Profile{
		Name:     "gemini",
		Title:    "Gemini CLI",
		Formats:  []string{"gemini-json", "gemini-jsonl", "gemini-logs"},
		Programs: []string{"gemini"},
		Installs: []string{"/node_modules/@google/gemini-cli/"},
		Wrappers: []Wrapper{
			// Every shell call: bash -c "shopt -u promptvars …;
			// _bgpids_file=$TMPDIR/gemini-shell-*/bgpids.tmp ( trap … EXIT
			// <command> )".
			{Name: "bgpids-trap", Role: Carrier, Prefix: "shopt -u promptvars", Contains: []string{"gemini-shell-"}},
		},
		Transcripts: []Location{{
			Roots: []string{"~/.gemini/tmp"},
			// <project>/chats/session-*.json(l), a subagent's below its session.
			Globs: []string{"*/chats/session-*.json", "*/chats/session-*.jsonl", "*/chats/*/*.jsonl"},
		}},
		ConfigDirs:       []string{".gemini"},
		Tokens:           []string{"gemini"},
		InstructionFiles: []string{"GEMINI.md", ".geminiignore"},
		Credentials: []File{
			{Path: "~/.gemini/oauth_creds.json", Clients: []string{"gemini"}},
			{Path: "~/.gemini/google_accounts.json", Clients: []string{"gemini"}},
			{Path: "~/.gemini/.env", Clients: []string{"gemini"}},
			{Path: "~/.gemini/**", Clients: []string{"gemini"}, Severity: "medium"},
		},
		SandboxSettings: []File{
			{Path: "~/.gemini/settings.json", Clients: []string{"gemini"}, Severity: "high"},
			{Path: "~/.gemini/.env", Clients: []string{"gemini"}, Severity: "high"},
			{Path: "/etc/gemini-cli/**", Severity: "high"},
			{Path: ".gemini/settings.json", Clients: []string{"gemini"}, Severity: "medium"},
			{Path: ".gemini/.env", Clients: []string{"gemini"}, Severity: "medium"},
		},
		Hosts: []Host{
			{Name: "generativelanguage.googleapis.com", Role: ModelAPI, Egress: true},
			{Name: "cloudcode-pa.googleapis.com", Role: ModelAPI, Egress: true}, // signed in with Google
			{Name: "oauth2.googleapis.com", Role: SignIn, Egress: true},
			// Vertex AI, also its regional <region>-aiplatform names.
			{Name: "aiplatform.googleapis.com", Role: ModelAPI, Egress: true},
			{Name: "*-aiplatform.googleapis.com", Role: ModelAPI, Egress: true},
			{Name: "play.googleapis.com", Role: Telemetry, Egress: true},
		},
		EndpointVars: []string{"GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"},
	})
}
