package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
)

// Entry is one item from Reader.Next: exactly one of ToolCall and Claim is set.
type Entry struct {
	ToolCall *ToolCall
	Claim    *Claim
}

// Reader reads one transcript incrementally. Tool calls and claims are handed
// out when the turn they belong to ends (the next user prompt, a turn-complete
// record, or the end of input), so a call comes out with its result and the
// claims come out with the calls they refer to, while memory stays bounded by
// one turn. What arrives about a call after its turn was handed out (a
// background process's exit seen by a later poll) is not applied to it; the
// polling call that saw it still carries it. ParseFile keeps every call until
// the end and so applies such late news too.
type Reader struct {
	src    string
	opts   Options
	format Format
	br     *bufio.Reader
	lp     lineParser // JSONL formats
	dp     docParser  // whole-document formats
	b      *builder
	line   int
	done   bool
}

// lineParser handles one record of a JSONL format; finish runs at the end of
// the input.
type lineParser interface {
	record(b *builder, n int, raw []byte)
	finish(b *builder)
}

// docParser reads a whole-document format from r, streaming with a
// json.Decoder so one element is in memory at a time.
type docParser interface {
	parse(b *builder, r *lineCounter) error
}

// NewReader sniffs r's format and returns a reader over it. source names the
// input in warnings (usually the file path).
func NewReader(r io.Reader, source string, opts Options) (*Reader, error) {
	return newReader(r, source, opts, false)
}

func newReader(r io.Reader, source string, opts Options, keep bool) (*Reader, error) {
	// Read the head for sniffing, growing the buffer only as far as the
	// input goes, then put it back in front of the rest.
	var head bytes.Buffer
	if _, err := head.ReadFrom(io.LimitReader(r, sniffSize)); err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	prefix := head.Bytes()
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(prefix), r), 64<<10)
	format := opts.Format
	if format == "" {
		if len(bytes.TrimSpace(prefix)) == 0 {
			return nil, fmt.Errorf("%s: %w", source, ErrEmpty)
		}
		format = Sniff(prefix)
		if format == "" {
			return nil, unknownFormatError(source)
		}
	}
	rd := &Reader{src: source, opts: opts, format: format, br: br}
	rd.b = newBuilder(source, opts, format, keep)
	switch format {
	case FormatClaudeCode, FormatClaudeStream:
		rd.lp = newClaudeParser(format, opts)
	case FormatCodex:
		rd.lp = newCodexParser()
	case FormatGeminiJSONL:
		rd.lp = newGeminiJSONLParser()
	case FormatJSONL:
		rd.lp = &jsonlParser{}
	case FormatGeminiJSON:
		rd.dp = &geminiJSONParser{}
	case FormatGeminiLogs:
		rd.dp = &geminiLogsParser{}
	case FormatOTel:
		rd.dp = &otelParser{}
	default:
		return nil, fmt.Errorf("%s: %w: %q", source, ErrUnknownFormat, format)
	}
	return rd, nil
}

// Format reports the format the reader sniffed (or was told).
func (r *Reader) Format() Format { return r.format }

// Transcript returns what the reader knows about the session so far: format,
// agent, session id, cwd, times, usage and warnings. Its ToolCalls and Claims
// are left empty; they come from Next.
func (r *Reader) Transcript() *Transcript { return r.b.t }

// Next returns the next tool call or claim, or io.EOF after the last one.
func (r *Reader) Next() (Entry, error) {
	for len(r.b.ready) == 0 {
		if r.done {
			return Entry{}, io.EOF
		}
		if err := r.step(); err != nil {
			return Entry{}, err
		}
	}
	e := r.b.ready[0]
	r.b.ready[0] = Entry{}
	r.b.ready = r.b.ready[1:]
	return e, nil
}

// step consumes one line (or, for whole-document formats, the document).
func (r *Reader) step() error {
	if r.dp != nil {
		lc := &lineCounter{r: r.br}
		if err := r.dp.parse(r.b, lc); err != nil {
			return err
		}
		r.b.finish()
		r.done = true
		return nil
	}
	raw, last, err := r.readLine()
	if raw != nil {
		r.line++
		r.handle(raw, last)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			r.lp.finish(r.b)
			r.b.finish()
			r.done = true
			return nil
		}
		return fmt.Errorf("read %s: %w", r.src, err)
	}
	return nil
}

func (r *Reader) handle(raw []byte, last bool) {
	line := bytes.TrimSpace(raw)
	if len(line) == 0 {
		return
	}
	if line[0] != '{' || !json.Valid(line) {
		if last {
			r.b.warn(r.line, "incomplete last line (the file is still being written?)")
		} else {
			r.b.warn(r.line, "not a JSON object; line skipped")
		}
		return
	}
	r.lp.record(r.b, r.line, line)
}

// readLine returns the next line without its newline. A line longer than
// MaxLine is skipped (nil, with a warning) after reading past it, so memory
// stays bounded. last is true for a final line with no newline.
func (r *Reader) readLine() (line []byte, last bool, err error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > r.opts.maxLine() {
				tooLong = true
				buf = nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && (len(buf) > 0 || tooLong) {
				if tooLong {
					r.line++
					r.b.warn(r.line, fmt.Sprintf("line longer than %d bytes skipped", r.opts.maxLine()))
					return nil, true, err
				}
				return buf, true, err
			}
			return nil, false, err
		}
		if tooLong {
			r.line++
			r.b.warn(r.line, fmt.Sprintf("line longer than %d bytes skipped", r.opts.maxLine()))
			return nil, false, nil
		}
		return buf, false, nil
	}
}

// lineCounter counts newlines as a json.Decoder consumes its input, so
// whole-document parsers can name the line a problem sits on.
type lineCounter struct {
	r     io.Reader
	nl    []int64 // offsets of newlines seen
	total int64
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i := range n {
		if p[i] == '\n' {
			c.nl = append(c.nl, c.total+int64(i))
		}
	}
	c.total += int64(n)
	return n, err
}

// lineAt converts a byte offset into a 1-based line number.
func (c *lineCounter) lineAt(off int64) int {
	i, _ := slices.BinarySearch(c.nl, off)
	return i + 1
}

// Parse reads a whole transcript from r. name is used in warnings and errors.
// It does not look for subagent files; ParseFile does.
func Parse(r io.Reader, name string, opts Options) (*Transcript, error) {
	rd, err := newReader(r, name, opts, true)
	if err != nil {
		return nil, err
	}
	t := rd.b.t
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.ToolCall != nil {
			t.ToolCalls = append(t.ToolCalls, e.ToolCall)
		}
		if e.Claim != nil {
			t.Claims = append(t.Claims, e.Claim)
		}
	}
	if t.ToolCalls == nil {
		t.ToolCalls = []*ToolCall{}
	}
	if t.Claims == nil {
		t.Claims = []*Claim{}
	}
	return t, nil
}

// ParseFile reads the transcript at path as one whole session: the file's own
// tool calls plus, unless opts.NoSubagents, its subagents' calls, whether they
// sit inline, in linked subagent files beside path as the agent lays them out,
// or only mirrored in progress records. Each call appears once (by tool-use
// id), and a subagent's calls carry the id of the call that started them.
func ParseFile(path string, opts Options) (*Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	t, err := Parse(f, path, opts)
	if err != nil {
		return nil, err
	}
	defer sortByStart(t)
	if opts.NoSubagents {
		return t, nil
	}
	switch t.Format {
	case FormatClaudeCode:
		if err := linkClaudeSubagents(t, path, opts); err != nil {
			return nil, err
		}
	case FormatGeminiJSON, FormatGeminiJSONL:
		if err := linkGeminiSubagents(t, path, opts); err != nil {
			return nil, err
		}
	}
	return t, nil
}

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
			mergeCall(have, tc)
			continue
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
	t.Warnings = append(t.Warnings, sub.Warnings...)
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
}

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
	src   string
	base  string // base name of src, for synthesised ids
	opts  Options
	t     *Transcript
	keep  bool                 // keep every call for late updates (Parse, ParseFile)
	byID  map[string]*ToolCall // calls not yet forgotten
	gone  map[string]bool      // streaming: ids handed out and forgotten
	turn  []*ToolCall          // calls of the current turn, for claims
	pend  []Entry              // current turn, in order of appearance
	ready []Entry
	seq   int
	// subSaid holds the claim sentences subagents made, which their
	// parent repeating is no claim of its own (repeated).
	subSaid map[string]bool
}

func newBuilder(src string, opts Options, format Format, keep bool) *builder {
	return &builder{
		src:  src,
		base: filepath.Base(src),
		opts: opts,
		keep: keep,
		t:    &Transcript{Path: src, Format: format, Agent: agentFor(format)},
		byID: map[string]*ToolCall{},
		gone: map[string]bool{},
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

// add records a new call, or merges tc into the call with the same id and
// returns that one. It returns nil for an id already handed out.
func (b *builder) add(tc *ToolCall) *ToolCall {
	if b.gone[tc.ID] {
		return nil
	}
	if have := b.byID[tc.ID]; have != nil {
		mergeCall(have, tc)
		return have
	}
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
