package transcript

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
)

// mergeSubagent adds sub's calls and claims to t, each call once by id,
// filling in what t's copy (say, an agent_progress mirror) lacks.
func mergeSubagent(t, sub *Transcript, parentID, agentID string) {
	byID := make(map[string]*ToolCall, len(t.ToolCalls))
	for _, tc := range t.ToolCalls {
		byID[tc.ID] = tc
	}
	for _, tc := range sub.ToolCalls {
		if tc.ParentID == "" {
			tc.ParentID = parentID
		}
		if tc.AgentID == "" {
			tc.AgentID = agentID
		}
		if have, ok := byID[tc.ID]; ok {
			if !differs(have, tc) {
				mergeCall(have, tc)
				continue
			}
			renameClash(t, byID, tc)
		}
		byID[tc.ID] = tc
		t.ToolCalls = append(t.ToolCalls, tc)
	}
	for _, c := range sub.Claims {
		if c.ParentID == "" {
			c.ParentID = parentID
		}
		t.Claims = append(t.Claims, c)
	}
	t.Usage.InputTokens += sub.Usage.InputTokens
	t.Usage.OutputTokens += sub.Usage.OutputTokens
	t.Usage.CacheReadTokens += sub.Usage.CacheReadTokens
	t.Usage.CacheCreationTokens += sub.Usage.CacheCreationTokens
	t.Compactions += sub.Compactions
	t.Responses = append(t.Responses, sub.Responses...)
	t.Warnings = append(t.Warnings, sub.Warnings...)
	t.Limits = append(t.Limits, sub.Limits...)
	if !sub.StartedAt.IsZero() && (t.StartedAt.IsZero() || sub.StartedAt.Before(t.StartedAt)) {
		t.StartedAt = sub.StartedAt
	}
	if sub.EndedAt.After(t.EndedAt) {
		t.EndedAt = sub.EndedAt
	}
}

// sortByStart orders calls and claims by time after files were merged; the
// sort is stable and calls without a time keep their place.
func sortByStart(t *Transcript) {
	slices.SortStableFunc(t.ToolCalls, func(a, b *ToolCall) int {
		if a.StartedAt.IsZero() || b.StartedAt.IsZero() {
			return 0
		}
		return a.StartedAt.Compare(b.StartedAt)
	})
	slices.SortStableFunc(t.Claims, func(a, b *Claim) int {
		if a.At.IsZero() || b.At.IsZero() {
			return 0
		}
		return a.At.Compare(b.At)
	})
	slices.SortStableFunc(t.Responses, func(a, b time.Time) int { return a.Compare(b) })
}

// response records a model response recorded at ts (Transcript.Responses).
func (b *builder) response(ts time.Time) { b.t.Responses = append(b.t.Responses, ts) }

// mergeCall fills dst's empty fields from src.
func mergeCall(dst, src *ToolCall) {
	if dst.Tool == "" {
		dst.Tool = src.Tool
	}
	if dst.Kind == "" || dst.Kind == KindOther && src.Kind != "" {
		dst.Kind = src.Kind
	}
	if dst.Command == "" {
		dst.Command = src.Command
	}
	if dst.Argv == nil {
		dst.Argv = src.Argv
	}
	dst.Paths = appendUnique(dst.Paths, src.Paths...)
	dst.URLs = appendUnique(dst.URLs, src.URLs...)
	if dst.StartedAt.IsZero() {
		dst.StartedAt = src.StartedAt
	}
	if dst.EndedAt.IsZero() {
		dst.EndedAt = src.EndedAt
	}
	if dst.Result == "" {
		dst.Result = src.Result
	}
	dst.IsError = dst.IsError || src.IsError
	if dst.ExitCode == nil {
		dst.ExitCode = src.ExitCode
	}
	if dst.Cwd == "" {
		dst.Cwd = src.Cwd
	}
	if dst.ParentID == "" {
		dst.ParentID = src.ParentID
	}
	if dst.AgentID == "" {
		dst.AgentID = src.AgentID
	}
	if dst.Polls == "" {
		dst.Polls = src.Polls
	}
	dst.Rejected = dst.Rejected || src.Rejected
	dst.Background = dst.Background || src.Background
	if dst.SessionID == "" {
		dst.SessionID = src.SessionID
	}
	if dst.Source == "" {
		dst.Source = src.Source
	}
}

func appendUnique(dst []string, vals ...string) []string {
	for _, v := range vals {
		if v != "" && !slices.Contains(dst, v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// builder collects what the format parsers find and hands it out per turn.
type builder struct {
	src      string
	base     string // base name of src, for synthesised ids
	opts     Options
	t        *Transcript
	keep     bool                   // keep every call for late updates (Parse, ParseFile)
	byID     map[string]*ToolCall   // calls not yet forgotten
	fresh    map[string]bool        // ids a record introducing a call used (addNew)
	dups     map[string][]*ToolCall // calls kept under a new id, by the id they reused
	answered map[*ToolCall]bool     // calls whose result resultCall handed out
	gone     map[string]bool        // streaming: ids handed out and forgotten
	turn     []*ToolCall            // calls of the current turn, for claims
	pend     []Entry                // current turn, in order of appearance
	ready    []Entry
	seq      int
	// subSaid holds the claim sentences subagents made, which their
	// parent repeating is no claim of its own (repeated).
	subSaid map[string]bool
}

func newBuilder(src string, opts Options, format Format, keep bool) *builder {
	return &builder{
		src:      src,
		base:     filepath.Base(src),
		opts:     opts,
		keep:     keep,
		t:        &Transcript{Path: src, Format: format, Agent: agentFor(format)},
		byID:     map[string]*ToolCall{},
		fresh:    map[string]bool{},
		dups:     map[string][]*ToolCall{},
		answered: map[*ToolCall]bool{},
		gone:     map[string]bool{},
	}
}

// agentFor names the agent whose profile lists format; "" for the
// generic formats, whose files name their agent themselves.
func agentFor(f Format) string {
	if p, ok := agent.ByFormat(string(f)); ok && !p.Generic {
		return p.Name
	}
	return ""
}

func (b *builder) where(line int) string {
	if line <= 0 {
		return b.src
	}
	return fmt.Sprintf("%s:%d", b.src, line)
}

func (b *builder) warn(line int, msg string) {
	b.t.Warnings = append(b.t.Warnings, Warning{Source: b.where(line), Message: msg})
}

// seen widens the transcript's time span.
func (b *builder) seen(ts time.Time) {
	if ts.IsZero() {
		return
	}
	if b.t.StartedAt.IsZero() || ts.Before(b.t.StartedAt) {
		b.t.StartedAt = ts
	}
	if ts.After(b.t.EndedAt) {
		b.t.EndedAt = ts
	}
}

// syntheticID names a call whose record carries no id.
func (b *builder) syntheticID(line int) string {
	b.seq++
	return fmt.Sprintf("%s:%d#%d", b.base, line, b.seq)
}

// call returns the call with id, or nil when unknown (or already handed out).
func (b *builder) call(id string) *ToolCall {
	if id == "" {
		return nil
	}
	return b.byID[id]
}

// add records a call from a record that may repeat one already seen (an
// agent_progress mirror, a span exported twice): under an id in use it
// merges tc into that call and returns that one, unless tc is plainly
// another call (see differs). It returns nil for an id already handed out.
func (b *builder) add(tc *ToolCall) *ToolCall { return b.addCall(tc, false) }

// addNew records a call from a record that introduces one, so an id in use
// by another such record is a second call, not a repeat: it is kept under
// a new id with a warning (see reuse).
func (b *builder) addNew(tc *ToolCall) *ToolCall { return b.addCall(tc, true) }

func (b *builder) addCall(tc *ToolCall, fresh bool) *ToolCall {
	have := b.byID[tc.ID]
	switch {
	case b.gone[tc.ID] && !fresh:
		return nil
	case b.gone[tc.ID], have != nil && (fresh && b.fresh[tc.ID] || differs(have, tc)):
		b.reuse(tc, have)
	case have != nil:
		mergeCall(have, tc)
		b.fresh[tc.ID] = b.fresh[tc.ID] || fresh
		return have
	}
	b.fresh[tc.ID] = fresh
	if tc.Agent == "" {
		tc.Agent = b.t.Agent
	}
	if tc.SessionID == "" {
		tc.SessionID = b.t.SessionID
	}
	if tc.Cwd == "" && tc.Kind == KindShell {
		tc.Cwd = b.t.Cwd
	}
	b.byID[tc.ID] = tc
	b.turn = append(b.turn, tc)
	b.pend = append(b.pend, Entry{ToolCall: tc})
	return tc
}

// result records a call's result text, capped to the result limit.
func (b *builder) result(tc *ToolCall, text string) {
	tc.Result = excerpt(text, b.opts.resultLimit())
}

// say extracts claims from assistant text and queues them with the turn.
func (b *builder) say(line int, at time.Time, text, parentID string) {
	for _, c := range ExtractClaims(text) {
		if b.repeated(c.Text, parentID) {
			continue
		}
		c.At = at
		c.ParentID = parentID
		c.SessionID = b.t.SessionID
		c.Source = b.where(line)
		c.ToolCallIDs = linkClaim(c, b.turn, parentID)
		b.pend = append(b.pend, Entry{Claim: c})
	}
}

// repeated reports whether sentence, said by the agent parentID belongs
// to ("" for the main agent), repeats a subagent's report: a sentence a
// subagent claimed, or one in the result of a subagent call of the turn.
// A subagent's sentences are remembered for their parent.
func (b *builder) repeated(sentence, parentID string) bool {
	if parentID != "" {
		if b.subSaid == nil || len(b.subSaid) >= 1<<12 {
			b.subSaid = map[string]bool{}
		}
		b.subSaid[sentence] = true
		return false
	}
	if b.subSaid[sentence] {
		return true
	}
	for _, tc := range b.turn {
		if tc.Kind == KindTask && strings.Contains(strings.Join(strings.Fields(tc.Result), " "), sentence) {
			return true
		}
	}
	return false
}

// endTurn hands out the current turn.
func (b *builder) endTurn() {
	b.ready = append(b.ready, b.pend...)
	if !b.keep {
		for _, e := range b.pend {
			if e.ToolCall != nil {
				delete(b.byID, e.ToolCall.ID)
				b.gone[e.ToolCall.ID] = true
			}
		}
	}
	if !b.keep {
		clear(b.dups)
		clear(b.answered)
		clear(b.fresh)
	}
	b.pend = nil
	b.turn = nil
}

func (b *builder) finish() { b.endTurn() }

// excerpt cuts s to at most n bytes on a rune boundary, marking the cut.
func excerpt(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }

// parseTime reads the timestamps agents write: RFC 3339 with or without
// fractional seconds.
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
