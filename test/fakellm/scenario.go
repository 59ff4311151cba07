// Package fakellm is a scripted model server for end-to-end tests: it speaks
// the streaming wire protocols of the Anthropic Messages API (Claude Code),
// the OpenAI Responses API (Codex CLI) and the Gemini API (Gemini CLI), and
// plain-JSON OpenAI Chat Completions with function tools (mini-swe-agent),
// on a loopback port, and answers each request with the next turn of a
// Scenario.
//
// A Scenario is written once, agent-neutrally (Shell, WriteFile, ReadFile,
// EditFile); the server maps each call onto the tool names and argument shapes
// the requesting agent offered in the request's tool list, so the same
// scenario drives every agent. A bash-only agent (mini-swe-agent) gets each
// call as one shell command, and a turn without calls as its submit command.
//
// The reply is decided from the request, never from a counter: the server
// counts the assistant turns already in the conversation and answers with the
// scenario's next one. Agents send side requests (titles, routing, retries);
// a counter would drift, the conversation does not. A request that offers no
// tools is answered with short plain text.
//
// Every request is logged (method, path, body) so a test can assert on what
// the agent sent, for example that a tool's result went back to the model.
package fakellm

import (
	"path/filepath"
)

// Scenario is the script of one agent session: the assistant turns, in order.
type Scenario struct {
	// Turns are the assistant's turns. Turn i answers the request whose
	// conversation already holds i assistant turns. A turn with calls ends
	// with stop reason "tool use"; a turn without calls ends the session.
	Turns []Turn

	// Dir resolves relative paths in WriteFile, ReadFile and EditFile (some
	// agents accept only absolute paths). Empty leaves paths as written.
	Dir string

	// Done is the text of any request past the last turn (an agent that
	// keeps going after the script ends). Empty means "Done.".
	Done string
}

// Turn is one assistant message: optional text, then zero or more tool calls.
type Turn struct {
	Text  string
	Calls []Call
}

// Call is one agent-neutral tool call: Shell, WriteFile, ReadFile or EditFile.
type Call interface {
	call()
}

// Shell runs Command with the agent's shell tool (Claude Bash, Codex
// exec_command or shell, Gemini run_shell_command).
type Shell struct {
	Command string
}

// WriteFile creates or overwrites Path with Content (Claude Write, Codex
// apply_patch "Add File", Gemini write_file). Codex's apply_patch writes
// whole lines: Content without a final newline gains one.
type WriteFile struct {
	Path    string
	Content string
}

// ReadFile reads Path (Claude Read, Gemini read_file; Codex has no read tool,
// so it gets a shell "cat" instead).
type ReadFile struct {
	Path string
}

// EditFile replaces Old with New in Path (Claude Edit, Gemini replace, Codex
// apply_patch "Update File"). For Codex, Old and New must be whole lines.
type EditFile struct {
	Path string
	Old  string
	New  string
}

func (Shell) call()     {}
func (WriteFile) call() {}
func (ReadFile) call()  {}
func (EditFile) call()  {}

// turn returns the scenario's turn number n, or the closing text turn when
// the script has run out.
func (sc Scenario) turn(n int) Turn {
	if n >= 0 && n < len(sc.Turns) {
		return sc.Turns[n]
	}
	done := sc.Done
	if done == "" {
		done = "Done."
	}
	return Turn{Text: done}
}

// abs resolves p against the scenario's Dir.
func (sc Scenario) abs(p string) string {
	if sc.Dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(sc.Dir, p)
}
