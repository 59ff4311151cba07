package transcript

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/polygraph/polygraph/internal/untrusted"
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

	foreignN, foreignLast int // lines of another format skipped; the last one
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

var utf8BOM = []byte("\xef\xbb\xbf")

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
		return nil, fmt.Errorf("read %s: %w", source, pathless(err))
	}
	// A byte order mark would hide the first record (and with it the
	// session's metadata) from the line parsers and the JSON decoders.
	prefix := bytes.TrimPrefix(head.Bytes(), utf8BOM)
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
	case FormatMini:
		rd.dp = &miniParser{}
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
			r.foreignSummary()
			r.lp.finish(r.b)
			r.b.finish()
			r.done = true
			return nil
		}
		return fmt.Errorf("read %s: %w", r.src, pathless(err))
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
	if f := classify(topKeys(line[:min(len(line), classifySize)])); f != "" && !sameFamily(f, r.format) {
		r.foreign(f)
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
	return ParseContext(context.Background(), r, name, opts)
}

// ParseContext is Parse, stopping with ctx's error once ctx is done; a read
// from a pipe that is waiting for data ends then too.
func ParseContext(ctx context.Context, r io.Reader, name string, opts Options) (*Transcript, error) {
	r, stop := withContext(ctx, r)
	defer stop()
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
// Only a regular file is read (ErrNotRegular otherwise), so a FIFO in its
// place cannot block; a subagent file that is not one is skipped with a
// warning.
//
// A whole-document transcript the agent was rewriting while it was read
// (mini-swe-agent's) is read again a few times; if it stays incomplete the
// result carries a warning saying so.
func ParseFile(path string, opts Options) (*Transcript, error) {
	return ParseFileContext(context.Background(), path, opts)
}

// ParseFileContext is ParseFile, stopping with ctx's error once ctx is done.
func ParseFileContext(ctx context.Context, path string, opts Options) (*Transcript, error) {
	if opts.budget == nil {
		opts.budget = &budget{left: opts.maxBytes()}
	}
	t, err := parsePath(ctx, path, opts)
	for try := 0; err == nil && t.incomplete && try < rereads && ctx.Err() == nil; try++ {
		time.Sleep(rereadWait)
		if again, err2 := parsePath(ctx, path, opts); err2 == nil && (!again.incomplete || len(again.ToolCalls) >= len(t.ToolCalls)) {
			t = again
		}
	}
	if err != nil {
		return nil, err
	}
	defer sortByStart(t)
	if opts.NoSubagents {
		return t, nil
	}
	switch t.Format {
	case FormatClaudeCode:
		if err := linkClaudeSubagents(ctx, t, path, opts); err != nil {
			return nil, err
		}
	case FormatGeminiJSON, FormatGeminiJSONL:
		if err := linkGeminiSubagents(ctx, t, path, opts); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// capped reads r up to left bytes, then ends; cut says whether r had
// more.
type capped struct {
	r    io.Reader
	left int64
	cut  bool
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
			c.cut = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// How often, and how far apart, ParseFile reads an incomplete document again.
const (
	rereads    = 3
	rereadWait = 50 * time.Millisecond
)

// parsePath parses the regular file at path once, within what is left of
// opts.budget: the holes of a sparse file are skipped, and reading stops
// at the budget's end. Each is said in a warning.
func parsePath(ctx context.Context, path string, opts Options) (*Transcript, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", path, pathless(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", path, pathless(err))
	}
	if opts.budget.left <= 0 {
		return nil, fmt.Errorf("read transcript %s: not read: the %s read limit was reached before it", path, untrusted.Size(opts.maxBytes()))
	}
	var warns []Warning
	var r io.Reader = f
	if onDisk, sparse := untrusted.Sparse(st); sparse {
		r = untrusted.SkipHoles(f)
		warns = append(warns, Warning{Source: path, Message: fmt.Sprintf("sparse file (%s long, %s on disk): its holes were skipped",
			untrusted.Size(st.Size()), untrusted.Size(onDisk))})
	}
	c := &capped{r: r, left: opts.budget.left}
	t, err := ParseContext(ctx, c, path, opts)
	opts.budget.left = c.left
	if c.cut {
		warns = append(warns, Warning{Source: path, Message: fmt.Sprintf("reading stopped at the %s limit on transcript bytes (the file is %s long); the rest is not read",
			untrusted.Size(opts.maxBytes()), untrusted.Size(st.Size()))})
	}
	if err != nil {
		return nil, err
	}
	t.Limits = append(t.Limits, warns...)
	return t, nil
}
