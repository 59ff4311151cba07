package transcript

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// corpusDir is the shared corpus of real transcripts, read in place: it sits
// beside the repository (../shared/corpus) and is never copied into it.
func corpusDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "transcripts")
	if _, err := os.Stat(filepath.Join(dir, "SOURCES.md")); err != nil {
		t.Skipf("transcript corpus not found at %s (it lives in the workspace's shared/ beside the repository): %v", dir, err)
	}
	return dir
}

// stats is what the corpus test asserts about one parsed file.
type stats struct {
	calls      int
	byTool     map[string]int
	ended      int // calls whose result arrived
	errors     int
	rejected   int
	background int
	polls      int            // polling calls that name the call they poll
	parents    map[string]int // Task/Agent call id -> subagent calls linked to it
	exit       map[int]int    // exit codes of shell calls
}

func statsOf(t *Transcript) stats {
	s := stats{byTool: map[string]int{}, parents: map[string]int{}, exit: map[int]int{}}
	for _, tc := range t.ToolCalls {
		s.calls++
		s.byTool[tc.Tool]++
		if !tc.EndedAt.IsZero() {
			s.ended++
		}
		if tc.IsError {
			s.errors++
		}
		if tc.Rejected {
			s.rejected++
		}
		if tc.Background {
			s.background++
		}
		if tc.Polls != "" {
			s.polls++
		}
		if tc.ParentID != "" {
			s.parents[tc.ParentID]++
		}
		if tc.ExitCode != nil && tc.Kind == KindShell {
			s.exit[*tc.ExitCode]++
		}
	}
	return s
}

// TestCorpus parses every file in the corpus. The expected numbers were
// derived independently of this package, with jq over the raw files (the
// queries are in the comments), and agree with SOURCES.md where it gives
// them.
//
// Claude Code: tool_use blocks from user/assistant lines and from
// progress/agent_progress mirrors, unique by id; tool_result blocks unique by
// tool_use_id; rejected = result text containing <tool_use_error> or starting
// "The user doesn't want to proceed", or toolUseResult "User rejected tool
// use"; exit codes = "Exit code N" prefixes, and 0 for Bash results that are
// neither errors, background starts nor interrupted. Codex: function_call and
// custom_tool_call items plus web_search_call items; exit codes from
// exec_command_end (0.125) or "Process exited with code N" (Desktop);
// write_stdin session_id mapped through "Process running with session ID N".
// Gemini: messages[].toolCalls[].
// It is one long table: one row per real transcript, each with its counts.
func TestCorpus(t *testing.T) {
	dir := corpusDir(t)
	tests := []struct {
		file   string
		opts   Options
		format Format
		want   stats
	}{
		{
			file: "claude-code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", format: FormatClaudeCode,
			want: stats{calls: 167, ended: 167, errors: 23, rejected: 13, background: 3, polls: 8,
				byTool: map[string]int{"Bash": 61, "BashOutput": 5, "Edit": 8, "Glob": 2, "KillBash": 3, "MultiEdit": 3, "Read": 28, "Task": 5, "TodoWrite": 19, "Write": 33},
				// 156 isSidechain tool_use blocks, linked through the sidechain root's prompt to one of the five Tasks.
				parents: map[string]int{"toolu_014i9ThHMNShCHocf9xMKasf": 33, "toolu_017rjDpjVPeNFmAEXNTkoP55": 24, "toolu_01EPom7jESzNbU8coiKjzVGS": 52, "toolu_01EbxY94wRUAGyMLj5wh699C": 39, "toolu_01LS6tcVd796SbQKmZqeVnWY": 8},
				exit:    map[int]int{0: 49}},
		},
		{
			file: "claude-code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", format: FormatClaudeCode, opts: Options{NoSubagents: true},
			want: stats{calls: 11, ended: 11, byTool: map[string]int{"Glob": 2, "Task": 5, "TodoWrite": 3, "Write": 1}},
		},
		{
			file: "claude-code/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", format: FormatClaudeCode,
			want: stats{calls: 21, ended: 21, errors: 3, rejected: 2,
				byTool:  map[string]int{"Bash": 5, "Edit": 1, "Glob": 3, "MultiEdit": 1, "Read": 3, "Task": 3, "TodoWrite": 5},
				parents: map[string]int{"toolu_014YF9TXhDRR7BnpasNJ7gjC": 2, "toolu_01LKfUwrsnof18CpWZQcJH44": 6},
				exit:    map[int]int{0: 4}},
		},
		{
			file: "claude-code/codemie-code/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", format: FormatClaudeCode,
			want: stats{calls: 6, ended: 6, byTool: map[string]int{"Bash": 1, "Edit": 1, "Read": 1, "Write": 3}, exit: map[int]int{0: 1}},
		},
		{
			// The 2.1.x layout: turn-2/subagents/agent-a485154.jsonl, linked by toolUseResult.agentId.
			file: "claude-code/codemie-code/incremental-subagents/turn-2.jsonl", format: FormatClaudeCode,
			want: stats{calls: 34, ended: 34, errors: 1, rejected: 1,
				byTool:  map[string]int{"Bash": 9, "Glob": 5, "Grep": 3, "Read": 15, "Task": 1, "Write": 1},
				parents: map[string]int{"toolu_bdrk_019PUUtqzQg8U5ogfuyQ7yLV": 20},
				exit:    map[int]int{0: 9}},
		},
		{
			file: "claude-code/codemie-code/incremental-subagents/turn-2.jsonl", format: FormatClaudeCode, opts: Options{NoSubagents: true},
			want: stats{calls: 14, ended: 14, byTool: map[string]int{"Bash": 6, "Glob": 2, "Read": 4, "Task": 1, "Write": 1}, exit: map[int]int{0: 6}},
		},
		{
			file: "claude-code/codemie-code/incremental-subagents/turn-2/subagents/agent-a485154.jsonl", format: FormatClaudeCode,
			want: stats{calls: 20, ended: 20, errors: 1, rejected: 1, byTool: map[string]int{"Bash": 3, "Glob": 3, "Grep": 3, "Read": 11}, exit: map[int]int{0: 3}},
		},
		{
			file: "claude-code/spotter/tool_heavy.jsonl", format: FormatClaudeCode,
			want: stats{calls: 6, ended: 6, background: 1, byTool: map[string]int{"Bash": 2, "Glob": 1, "Read": 1, "WebFetch": 1, "WebSearch": 1}, exit: map[int]int{0: 1}},
		},
		{
			// 9 subagent calls exist only as agent_progress mirrors (the agent file is not in the corpus).
			file: "claude-code/spotter/subagent.jsonl", format: FormatClaudeCode,
			want: stats{calls: 25, ended: 25, errors: 3, rejected: 2,
				byTool:  map[string]int{"AskUserQuestion": 1, "Bash": 8, "ExitPlanMode": 1, "Glob": 1, "Read": 6, "Task": 1, "WebFetch": 1, "WebSearch": 5, "Write": 1},
				parents: map[string]int{"toolu_01Cz2Pnv7qNcnK1ZiocxWhQX": 9},
				exit:    map[int]int{0: 7}},
		},
		{
			file: "claude-code/spotter/subagent.jsonl", format: FormatClaudeCode, opts: Options{NoSubagents: true},
			want: stats{calls: 16, ended: 16, byTool: map[string]int{"AskUserQuestion": 1, "Bash": 4, "ExitPlanMode": 1, "Glob": 1, "Read": 1, "Task": 1, "WebFetch": 1, "WebSearch": 5, "Write": 1}, exit: map[int]int{0: 4}},
		},
		{
			file: "claude-code/spotter/short.jsonl", format: FormatClaudeCode,
			want: stats{calls: 2, ended: 2, errors: 2, rejected: 2, byTool: map[string]int{"Bash": 1, "Glob": 1}},
		},
		{
			file: "claude-code/spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl", format: FormatClaudeCode,
			want: stats{calls: 48, ended: 48, errors: 2, rejected: 1, byTool: map[string]int{"Bash": 18, "Read": 30}, exit: map[int]int{0: 17, 127: 1}},
		},
		{
			file: "claude-code/spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl", format: FormatClaudeCode,
			want: stats{},
		},
		{
			// 43 exec_command (all still running at their yield, polled by 54
			// write_stdin), 43 exec_command_end: exit 0 ×39, 1 ×3, 2 ×1; errors =
			// 4 non-zero exits + 1 "write_stdin failed".
			file: "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", format: FormatCodex,
			want: stats{calls: 105, ended: 105, errors: 5, background: 43, polls: 54,
				byTool: map[string]int{"apply_patch": 3, "exec_command": 43, "update_plan": 2, "web_search": 3, "write_stdin": 54},
				exit:   map[int]int{0: 39, 1: 3, 2: 1}},
		},
		{
			// Desktop rollout: no end events; exit codes from "Process exited with code N".
			file: "codex/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl", format: FormatCodex,
			want: stats{calls: 38, ended: 38, errors: 1, byTool: map[string]int{"exec_command": 35, "mcp__node_repl__js": 3}, exit: map[int]int{0: 34, 1: 1}},
		},
		{
			file: "gemini/codemie-code/session-2025-12-01T21-45-5b959dae.json", format: FormatGeminiJSON,
			want: stats{calls: 10, ended: 10, byTool: map[string]int{"list_directory": 1, "read_file": 7, "replace": 1, "write_file": 1}},
		},
		{
			file: "gemini/codemie-code/session-2026-01-16T11-01-file-ops-37b7abef.json", format: FormatGeminiJSON,
			want: stats{calls: 14, ended: 14, byTool: map[string]int{"delegate_to_agent": 1, "read_file": 6, "search_file_content": 1, "write_file": 3, "write_todos": 3}},
		},
		{
			file: "gemini/codemie-code/logs.json", format: FormatGeminiLogs,
			want: stats{},
		},
	}
	for _, tt := range tests {
		name := tt.file
		if tt.opts.NoSubagents {
			name += "/no-subagents"
		}
		t.Run(name, func(t *testing.T) {
			tr, err := ParseFile(filepath.Join(dir, tt.file), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Format != tt.format {
				t.Errorf("format = %s, want %s", tr.Format, tt.format)
			}
			if len(tr.Warnings) != 0 {
				t.Errorf("%d warnings, want none; first: %s", len(tr.Warnings), tr.Warnings[0])
			}
			got := statsOf(tr)
			want := tt.want
			for _, m := range []*map[string]int{&want.byTool, &want.parents} {
				if *m == nil {
					*m = map[string]int{}
				}
			}
			if want.exit == nil {
				want.exit = map[int]int{}
			}
			if got.calls != want.calls || got.ended != want.ended || got.errors != want.errors || got.rejected != want.rejected ||
				got.background != want.background || got.polls != want.polls {
				t.Errorf("calls/ended/errors/rejected/background/polls = %d/%d/%d/%d/%d/%d, want %d/%d/%d/%d/%d/%d",
					got.calls, got.ended, got.errors, got.rejected, got.background, got.polls,
					want.calls, want.ended, want.errors, want.rejected, want.background, want.polls)
			}
			if !maps.Equal(got.byTool, want.byTool) {
				t.Errorf("by tool = %v, want %v", got.byTool, want.byTool)
			}
			if !maps.Equal(got.parents, want.parents) {
				t.Errorf("subagent links = %v, want %v", got.parents, want.parents)
			}
			if !maps.Equal(got.exit, want.exit) {
				t.Errorf("exit codes = %v, want %v", got.exit, want.exit)
			}
			seen := map[string]bool{}
			for _, tc := range tr.ToolCalls {
				if seen[tc.ID] {
					t.Errorf("call %s appears twice", tc.ID)
				}
				seen[tc.ID] = true
				if tc.Kind == "" || tc.Source == "" || tc.Agent == "" {
					t.Errorf("call %s lacks kind/source/agent: %+v", tc.ID, tc)
				}
				if tc.Polls != "" && !seen[tc.Polls] {
					t.Errorf("call %s polls %s, which is not an earlier call", tc.ID, tc.Polls)
				}
			}
		})
	}
}

// TestCorpusDetails pins facts about single calls that the counts do not
// show.
func TestCorpusDetails(t *testing.T) {
	dir := corpusDir(t)
	byID := func(t *testing.T, file string) map[string]*ToolCall {
		t.Helper()
		tr, err := ParseFile(filepath.Join(dir, file), Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*ToolCall{}
		for _, tc := range tr.ToolCalls {
			m[tc.ID] = tc
		}
		return m
	}
	t.Run("claude 1.0 background bash and its polls", func(t *testing.T) {
		m := byID(t, "claude-code/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
		bg := m["toolu_01DB4p8KRUVpcXmv24AFLqDv"]
		if bg == nil || !bg.Background || bg.Command != "pnpm dev --port 3001" || bg.ExitCode != nil {
			t.Fatalf("background call = %+v", bg)
		}
		poll := m["toolu_01A6azGWHnSXmXsuHxtwsDA9"] // BashOutput bash_1
		if poll == nil || poll.Kind != KindOther || poll.Polls != bg.ID {
			t.Errorf("BashOutput = %+v, want kind other polling %s", poll, bg.ID)
		}
		kill := m["toolu_01WWpAntC9RGiKW6mfL5wbzh"] // KillBash bash_1
		if kill == nil || kill.Polls != bg.ID {
			t.Errorf("KillBash = %+v, want polling %s", kill, bg.ID)
		}
		// Claude Code's Bash keeps its working directory across calls, and
		// each line records it: a subagent's earlier `cd` moved it here.
		if bg.Cwd != "/path/to/Demo/todo-app/types" {
			t.Errorf("cwd = %q", bg.Cwd)
		}
	})
	t.Run("claude rejected call started nothing", func(t *testing.T) {
		m := byID(t, "claude-code/spotter/short.jsonl")
		for _, id := range []string{"toolu_0116Hyi5v8ut7Ffb7d8qV1Sc", "toolu_01FdQ8qTyVyZjE3Kw4dguQGx"} {
			if tc := m[id]; tc == nil || !tc.Rejected || !tc.IsError || tc.ExitCode != nil {
				t.Errorf("%s = %+v, want rejected without exit code", id, tc)
			}
		}
	})
	t.Run("claude exit code from the result text", func(t *testing.T) {
		m := byID(t, "claude-code/spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl")
		tc := m["toolu_01SVBQTs2MZr5hJdeSs98kf8"]
		if tc == nil || tc.ExitCode == nil || *tc.ExitCode != 127 || !tc.IsError {
			t.Fatalf("call = %+v, want exit 127", tc)
		}
		if tc.AgentID != "afc096d" {
			t.Errorf("agent id = %q", tc.AgentID)
		}
	})
	t.Run("codex write_stdin polls its exec_command", func(t *testing.T) {
		m := byID(t, "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl")
		ex := m["call_Y2p6KmqwoTtpi6atpDPuxC5M"]
		if ex == nil || ex.Kind != KindShell || len(ex.Argv) != 3 || ex.Argv[0] != "/bin/zsh" || ex.Cwd != "/Users/Sample_User/repos/codemie-ai/codemie-code" {
			t.Fatalf("exec_command = %+v", ex)
		}
		if p := m["call_QazIeAavKevvIILVQkrDdKKT"]; p == nil || p.Polls != ex.ID || p.Kind != KindOther {
			t.Errorf("write_stdin = %+v, want polling %s", p, ex.ID)
		}
		patch := m["call_0gOiGGSkJEBvvlrXtBn0xzwL"]
		want := "/Users/Sample_User/repos/codemie-ai/codemie-code/src/agents/plugins/__tests__/codemie-code-reasoning.test.ts"
		if patch == nil || patch.Kind != KindEdit || !contains(patch.Paths, want) {
			t.Errorf("apply_patch = %+v, want edit of %s", patch, want)
		}
	})
	t.Run("gemini paths", func(t *testing.T) {
		m := byID(t, "gemini/codemie-code/session-2025-12-01T21-45-5b959dae.json")
		tc := m["read_file-1764625560264-22036414d7d65"]
		if tc == nil || tc.Kind != KindRead || !contains(tc.Paths, "/Users/Jane_Smith/Documents/projects/epm-cdme/assistants/lead.txt") {
			t.Errorf("read_file = %+v", tc)
		}
	})
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}
