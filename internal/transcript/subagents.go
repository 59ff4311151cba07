package transcript

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// linkClaudeSubagents reads the subagent files Claude Code wrote for the
// session in path and merges their calls into t, each under the Task/Agent
// call that started it: <session>/subagents/agent-<id>.jsonl (2.1.x) and
// sibling agent-<id>.jsonl files with the same sessionId (2.0.x). The link is
// the Task result's agentId; failing that, the subagent's first prompt equals
// the Task's prompt.
func linkClaudeSubagents(ctx context.Context, t *Transcript, path string, opts Options) error {
	links := t.claude
	if links == nil || links.ownAgentID != "" {
		return nil // not a main session file
	}
	dir := filepath.Dir(path)
	var files []string
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	for _, d := range uniqueStrings(filepath.Join(dir, stem, "subagents"), filepath.Join(dir, t.SessionID, "subagents")) {
		m, _ := filepath.Glob(filepath.Join(d, "agent-*.jsonl"))
		files = append(files, m...)
	}
	if t.SessionID != "" {
		siblings, _ := filepath.Glob(filepath.Join(dir, "agent-*.jsonl"))
		for _, f := range siblings {
			if headSessionID(f) == t.SessionID {
				files = append(files, f)
			}
		}
	}
	sub := opts
	sub.NoSubagents = true
	sub.Format = FormatClaudeCode
	for _, f := range uniqueStrings(files...) {
		st, err := ParseFileContext(ctx, f, sub)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			t.Warnings = append(t.Warnings, Warning{Source: f, Message: "subagent file skipped: " + subagentErr(f, err)})
			continue
		}
		agentID := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "agent-"), ".jsonl")
		if st.claude != nil && st.claude.ownAgentID != "" {
			agentID = st.claude.ownAgentID
		}
		parent := links.agentTask[agentID]
		if parent == "" && st.claude != nil && st.claude.firstPrompt != "" {
			parent = links.taskPrompt[st.claude.firstPrompt]
		}
		if parent == "" && !strings.HasPrefix(agentID, "acompact") {
			t.Warnings = append(t.Warnings, Warning{Source: f, Message: "subagent " + agentID + " not linked to a Task call in " + filepath.Base(path)})
		}
		mergeSubagent(t, st, parent, agentID)
		t.Subagents = append(t.Subagents, f)
	}
	if len(t.Subagents) > 0 {
		sortByStart(t)
	}
	return nil
}

// headSessionID reads the sessionId of a Claude Code file's first lines.
func headSessionID(path string) string {
	h, err := readHead(path, 64<<10)
	if err != nil {
		return ""
	}
	return firstField(h, "sessionId")
}

func uniqueStrings(vals ...string) []string {
	var out []string
	for _, v := range vals {
		out = appendUnique(out, v)
	}
	return out
}

// subagentErr is why a subagent file was skipped, without its path: the
// warning names the file already.
func subagentErr(path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err.Error()
	}
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), "read transcript "+path+": "), path+": ")
}
