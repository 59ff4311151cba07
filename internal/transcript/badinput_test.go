package transcript

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const (
	ccUse    = `{"type":"assistant","uuid":"a%d","sessionId":"s1","timestamp":"2026-01-01T00:00:0%dZ","message":{"id":"m%d","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"echo %d"}}]}}`
	ccResult = `{"type":"user","uuid":"u%d","sessionId":"s1","timestamp":"2026-01-01T00:00:0%dZ","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%d"}]}}`
)

func ccPair(i int) string {
	return fmt.Sprintf(ccUse, i, i, i, i, i) + "\n" + fmt.Sprintf(ccResult, i, i, i, i) + "\n"
}

// TestBadInput feeds damaged transcripts: every bad line becomes one warning
// with file:line, and everything else still counts.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		opts     Options
		calls    int
		warnings []string // file:line of each warning
	}{
		{"half-written last line", ccPair(1) + ccPair(2) + `{"type":"assistant","uuid":"a3","message":{"content":[{"ty`, Options{}, 2, []string{"x.jsonl:5"}},
		{"garbage line in the middle", ccPair(1) + "\x00\x01\x02garbage\xff\n" + ccPair(2), Options{}, 2, []string{"x.jsonl:3"}},
		{"not an object", ccPair(1) + "[1,2,3]\n42\n" + ccPair(2), Options{}, 2, []string{"x.jsonl:3", "x.jsonl:4"}},
		{"unknown record types and tools", ccPair(1) + `{"type":"hologram","uuid":"h","sessionId":"s1"}` + "\n" +
			`{"type":"assistant","uuid":"a9","sessionId":"s1","message":{"id":"m9","content":[{"type":"tool_use","id":"t9","name":"Teleport","input":{}},{"type":"mystery_block"}]}}` + "\n", Options{}, 2, nil},
		{"missing fields", ccPair(1) + `{"type":"assistant","uuid":"a8","sessionId":"s1","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]}}` + "\n" +
			`{"type":"user","sessionId":"s1","message":{}}` + "\n" + `{"type":"assistant","sessionId":"s1"}` + "\n", Options{}, 2, []string{"x.jsonl:3"}},
		{"wrong field types", ccPair(1) + `{"type":"assistant","uuid":7,"sessionId":"s1","message":"nope"}` + "\n", Options{}, 1, []string{"x.jsonl:3"}},
		{"blank lines and CRLF", "\r\n\n" + strings.ReplaceAll(ccPair(1), "\n", "\r\n") + "\n\n", Options{}, 1, nil},
		{"line over the limit", ccPair(1) + `{"type":"user","sessionId":"s1","message":{"content":"` + strings.Repeat("x", 5000) + `"}}` + "\n" + ccPair(2), Options{MaxLine: 4096}, 2, []string{"x.jsonl:3"}},
		{"line over the limit at the end", ccPair(1) + `{"type":"user","message":{"content":"` + strings.Repeat("x", 5000), Options{MaxLine: 4096}, 1, []string{"x.jsonl:3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := Parse(strings.NewReader(tt.input), "x.jsonl", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.ToolCalls) != tt.calls {
				t.Errorf("%d calls, want %d", len(tr.ToolCalls), tt.calls)
			}
			var got []string
			for _, w := range tr.Warnings {
				got = append(got, w.Source)
				if w.Message == "" {
					t.Errorf("warning at %s has no message", w.Source)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.warnings, ",") {
				t.Errorf("warnings at %v, want %v (%v)", got, tt.warnings, tr.Warnings)
			}
		})
	}
}

func TestUnknownFormat(t *testing.T) {
	tests := []struct {
		name, input string
		want        error
	}{
		{"empty", "", ErrEmpty},
		{"whitespace", " \n\n\t\n", ErrEmpty},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00\x00", ErrUnknownFormat},
		{"other JSON", `{"name":"package","version":"1.0.0"}` + "\n", ErrUnknownFormat},
		{"prose", "I ran the tests and they all pass.\n", ErrUnknownFormat},
		{"empty array", "[]", ErrUnknownFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.input), "f.jsonl", Options{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "f.jsonl: ") {
				t.Errorf("error %q should be one line naming the file", msg)
			}
			if errors.Is(err, ErrUnknownFormat) {
				for _, f := range Formats {
					if !strings.Contains(msg, string(f)) {
						t.Errorf("error %q does not name format %s", msg, f)
					}
				}
			}
		})
	}
	if _, err := ParseFile(filepath.Join(t.TempDir(), "missing.jsonl"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestSniff(t *testing.T) {
	dir := corpusDirOrEmpty(t)
	tests := []struct {
		file string
		want Format
	}{
		{"testdata/claude/stream-json.jsonl", FormatClaudeStream},
		{"testdata/claude20/c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl", FormatClaudeCode},
		{"testdata/claude20/agent-5d1e9a0f.jsonl", FormatClaudeCode},
		{"testdata/codex/rollout-2025-05-01T10-00-00-legacy.jsonl", FormatCodex},
		{"testdata/gemini/session-2026-03-01T10-00-abcd1234.jsonl", FormatGeminiJSONL},
		{"testdata/otel/traces.json", FormatOTel},
		{"testdata/otel/traces.jsonl", FormatOTel},
		{"testdata/otel/console.txt", FormatOTel},
		{"testdata/jsonl/agent.jsonl", FormatJSONL},
	}
	if dir != "" {
		tests = append(tests,
			struct {
				file string
				want Format
			}{filepath.Join(dir, "gemini/codemie-code/session-2025-12-01T21-45-5b959dae.json"), FormatGeminiJSON},
			struct {
				file string
				want Format
			}{filepath.Join(dir, "gemini/codemie-code/logs.json"), FormatGeminiLogs},
			struct {
				file string
				want Format
			}{filepath.Join(dir, "codex/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"), FormatCodex},
		)
	}
	for _, tt := range tests {
		head, err := readHead(tt.file, sniffSize)
		if err != nil {
			t.Fatal(err)
		}
		if got := Sniff(head); got != tt.want {
			t.Errorf("Sniff(%s) = %q, want %q", tt.file, got, tt.want)
		}
	}
}

func corpusDirOrEmpty(t *testing.T) string {
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "transcripts")
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

// TestReaderStreams checks that the reader hands calls out turn by turn,
// before it has read the rest of the input.
func TestReaderStreams(t *testing.T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pr.Close() })
	rd := make(chan *Reader, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := NewReader(pr, "pipe", Options{})
		if err != nil {
			errc <- err
			return
		}
		rd <- r
	}()
	prompt := func(i int) string {
		return fmt.Sprintf(`{"type":"user","uuid":"p%d","sessionId":"s1","message":{"role":"user","content":"step %d"}}`+"\n", i, i)
	}
	// The sniffer wants a full buffer or EOF; a long first turn fills it
	// (with assistant text: a call under a reused id would be a new call).
	go func() {
		fmt.Fprint(pw, prompt(0))
		for i := range 9 {
			fmt.Fprint(pw, ccPair(i))
		}
		for i := range 3000 {
			fmt.Fprintf(pw, `{"type":"assistant","uuid":"f%d","sessionId":"s1","message":{"id":"mf%d","role":"assistant","content":[{"type":"text","text":"%s"}]}}`+"\n", i, i, strings.Repeat("hmm ", 80))
		}
		fmt.Fprint(pw, prompt(1))
		fmt.Fprint(pw, ccPair(9))
		fmt.Fprint(pw, prompt(2)) // the second turn ends here; the pipe stays open
	}()
	var r *Reader
	select {
	case r = <-rd:
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("reader did not start")
	}
	seen := 0
	for seen < 10 {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e.ToolCall != nil {
			seen++
		}
	}
	pw.Close()
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after close: %v, want EOF", err)
	}
}

// TestLargeTranscript streams a transcript far larger than the memory it is
// allowed to take.
func TestLargeTranscript(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 64 MiB")
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	big := strings.Repeat("y", 64<<10) // 64 KiB of tool output, twice per result line
	const pairs = 512
	for i := range pairs {
		fmt.Fprintf(w, `{"type":"user","uuid":"p%d","sessionId":"s1","message":{"role":"user","content":"go"}}`+"\n", i)
		fmt.Fprintf(w, `{"type":"assistant","uuid":"a%d","sessionId":"s1","message":{"id":"m%d","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"cat big"}}]}}`+"\n", i, i, i)
		fmt.Fprintf(w, `{"type":"user","uuid":"u%d","sessionId":"s1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]},"toolUseResult":{"stdout":"%s","stderr":""}}`+"\n", i, i, big, big)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var peak uint64
	done := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	r, err := NewReader(in, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.ToolCall != nil {
			n++
			if len(e.ToolCall.Result) > DefaultResultLimit+4 {
				t.Fatalf("result of %d bytes kept", len(e.ToolCall.Result))
			}
		}
	}
	close(done)
	if n != pairs {
		t.Errorf("%d calls, want %d", n, pairs)
	}
	st, _ := os.Stat(path)
	t.Logf("file %d MiB, peak heap in use %d MiB", st.Size()>>20, peak>>20)
	if peak > 64<<20 {
		t.Errorf("peak heap %d MiB for a %d MiB file: input is not streamed", peak>>20, st.Size()>>20)
	}
}
