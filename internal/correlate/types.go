// Package correlate lines the kernel's account up with the agent's: it
// attributes every recorded event to the tool call that caused it, to the
// agent's own expected activity, or to nothing (unattributed, reported).
package correlate

import (
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/transcript"
)

// Reason says why an event was attributed the way it was.
type Reason string

// The attribution reasons.
const (
	// ReasonLineage: the event's process descends from the process the
	// agent spawned for a shell tool call.
	ReasonLineage Reason = "lineage"
	// ReasonInProcess: a file event of the agent process itself, matched
	// to an in-process tool call (Read/Write/Edit, apply_patch, …) by path
	// and time window.
	ReasonInProcess Reason = "in-process"
	// ReasonAgentAPI: the agent's own connection (and DNS) to its model API.
	ReasonAgentAPI Reason = "agent-api"
	// ReasonAgentBookkeeping: the agent's own files: its transcript, its
	// config and credentials read at start-up, its caches, runtime and
	// library loads.
	ReasonAgentBookkeeping Reason = "agent-bookkeeping"
	// ReasonUnattributed: no tool call and nothing expected explains it.
	ReasonUnattributed Reason = "unattributed"
)

// Attribution is the verdict on one event (Result.Attributions keeps
// them packed).
type Attribution struct {
	Seq        uint64 `json:"seq"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	Reason     Reason `json:"reason"`
	// AfterReturn marks an event of a call's process tree that happened
	// after the call's result reached the agent: the transcript could not
	// have shown it. Such events are also reported as unattributed activity.
	AfterReturn bool `json:"after_return,omitempty"`
	// Detail names the rule behind the verdict: for lineage "command"
	// (the root process carried the call's command), "wrapped-command",
	// "search-helper"; for in-process "path" or "host"; for bookkeeping the
	// kind of file or helper ("agent-data", "runtime", "shell-snapshot",
	// "git-probe", …); for unattributed what was left ("no-call",
	// "agent-file", "agent-network").
	Detail string `json:"detail,omitempty"`
}

// DetailAgentFile is the detail of the agent's own file activity that no
// call's path and none of its bookkeeping explains.
const DetailAgentFile = "agent-file"

// CallActivity is what one tool call really did, by the kernel's account.
type CallActivity struct {
	Call *transcript.ToolCall `json:"call"`
	// RootExecID is the image of the process the agent spawned for a shell
	// call ("" for in-process calls or when none was found).
	RootExecID string `json:"root_exec_id,omitempty"`
	// RootExit is that process's exit event, when recorded.
	RootExit *event.Event `json:"root_exit,omitempty"`
	// Execs are the exec events of the call's process tree, in order.
	Execs []*event.Event `json:"execs,omitempty"`
	// Reads and Writes are the distinct paths successfully opened for
	// reading / written, created, renamed or removed, in first-seen order.
	Reads  []string `json:"reads,omitempty"`
	Writes []string `json:"writes,omitempty"`
	// Connects are the connect events; DNS the names queried.
	Connects []*event.Event `json:"connects,omitempty"`
	DNS      []string       `json:"dns,omitempty"`
	// Events are the seqs of every event attributed to the call; Late
	// those of them after the call returned.
	Events []uint64 `json:"events"`
	Late   []uint64 `json:"late,omitempty"`
}

// Result is the whole attribution of one session against one transcript.
type Result struct {
	// AgentExecIDs are the images polygraph took for the agent itself.
	AgentExecIDs []string `json:"agent_exec_ids"`
	// AgentBy says how they were found (AgentByBoth, AgentByBehaviour,
	// AgentByProfile; "" for a session with no agent process), and
	// AgentNote what it rests on: the process holding the model
	// connection and starting the tools, and where the command line
	// disagreed.
	AgentBy   string `json:"agent_by,omitempty"`
	AgentNote string `json:"agent_note,omitempty"`
	// Calls in transcript order; ByCall indexes them by tool-call id.
	Calls  []*CallActivity          `json:"calls"`
	ByCall map[string]*CallActivity `json:"-"`
	// Attributions has one verdict per event of Events, in its order.
	Attributions Attributions `json:"attributions"`
	// Unattributed are the events no call or expected activity explains.
	Unattributed []*event.Event `json:"unattributed"`
	// Counts per reason.
	Counts map[Reason]int `json:"counts"`
	// AfterReturn counts the events marked AfterReturn (they are counted
	// under ReasonLineage in Counts and listed in Unattributed).
	AfterReturn int `json:"after_return"`
	// Tree is the session's process tree, built once here and read by
	// the rules too; its images index Events, the session's events in
	// seq order.
	Tree   *lineage.Tree  `json:"-"`
	Events []*event.Event `json:"-"`
}

// Of returns the attribution of the event with the given seq (a copy),
// or nil.
func (r *Result) Of(seq uint64) *Attribution {
	if i, ok := r.Attributions.Index(seq); ok {
		at := r.Attributions.At(i)
		return &at
	}
	return nil
}
