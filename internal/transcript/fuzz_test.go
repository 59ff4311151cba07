package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// seedLines adds lines of the corpus and the fixtures as fuzz seeds: the
// first lines of each file whole, and single lines on their own.
func seedLines(f *testing.F, add func([]byte)) {
	var files []string
	if dir := corpusDirOrEmptyF(); dir != "" {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Ext(p) != ".md" {
				files = append(files, p)
			}
			return nil
		})
	}
	_ = filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p) != "README.md" {
			files = append(files, p)
		}
		return nil
	})
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		head := data
		if len(head) > 16<<10 {
			head = head[:16<<10]
		}
		add(head)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for n := 0; sc.Scan() && n < 16; n++ {
			if len(sc.Bytes()) < 16<<10 {
				add(append([]byte(nil), sc.Bytes()...))
			}
		}
	}
}

func corpusDirOrEmptyF() string {
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "transcripts")
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

// fuzzParse runs one input through a format's parser and checks the
// invariants every parse keeps: no panic, and every call has an id and a kind.
func fuzzParse(t *testing.T, data []byte, format Format) {
	for _, keep := range []bool{true, false} {
		r, err := newReader(bytes.NewReader(data), "fuzz", Options{Format: format, MaxLine: 1 << 20}, keep)
		if err != nil {
			return
		}
		for {
			e, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc := e.ToolCall; tc != nil && (tc.ID == "" || tc.Kind == "") {
				t.Fatalf("call without id or kind: %+v", tc)
			}
			if c := e.Claim; c != nil && c.ToolCallIDs == nil {
				t.Fatalf("claim with nil tool_call_ids: %+v", c)
			}
		}
	}
}

// One fuzz target per parser, each fed every seed and forced to its format,
// plus the sniffer choosing by itself.
func FuzzParseClaude(f *testing.F)       { fuzzFormat(f, FormatClaudeCode) }
func FuzzParseClaudeStream(f *testing.F) { fuzzFormat(f, FormatClaudeStream) }
func FuzzParseCodex(f *testing.F)        { fuzzFormat(f, FormatCodex) }
func FuzzParseGeminiJSON(f *testing.F)   { fuzzFormat(f, FormatGeminiJSON) }
func FuzzParseGeminiJSONL(f *testing.F)  { fuzzFormat(f, FormatGeminiJSONL) }
func FuzzParseOTel(f *testing.F)         { fuzzFormat(f, FormatOTel) }
func FuzzParseJSONL(f *testing.F)        { fuzzFormat(f, FormatJSONL) }
func FuzzParseGeminiLogs(f *testing.F)   { fuzzFormat(f, FormatGeminiLogs) }
func FuzzParseMini(f *testing.F)         { fuzzFormat(f, FormatMini) }
func FuzzParseSniffed(f *testing.F)      { fuzzFormat(f, "") }

// FuzzParseFile: a file as discovery finds it, read through ParseFile's
// bounds (a small MaxBytes, so the cut is fuzzed too) and with the
// subagent files a Claude Code or Gemini transcript links beside it.
func FuzzParseFile(f *testing.F) {
	seedLines(f, func(b []byte) { f.Add(b, int64(0)) })
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		if len(data) > 1<<20 {
			return
		}
		path := filepath.Join(t.TempDir(), "session.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		tr, err := ParseFile(path, Options{MaxBytes: limit % (64 << 10), MaxLine: 1 << 20})
		if err != nil {
			return
		}
		for _, tc := range tr.ToolCalls {
			if tc.ID == "" || tc.Kind == "" {
				t.Fatalf("call without id or kind: %+v", tc)
			}
		}
	})
}

func fuzzFormat(f *testing.F, format Format) {
	seedLines(f, func(b []byte) { f.Add(b) })
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use"}]}}`))
	f.Add([]byte(`{"$rewindTo":"x"}` + "\n" + `{"$set":{"messages":[{"id":"a","type":"gemini","toolCalls":[{}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		fuzzParse(t, data, format)
	})
}

func FuzzExtractClaims(f *testing.F) {
	for _, s := range []string{"I ran the tests and they all pass", "All 42 tests pass.", "Installed requests", "I've updated src/app.py", "```\nx\n```", "`unterminated", "Removed `a` from b.go."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		turn := []*ToolCall{{ID: "a", Kind: KindShell, Command: "pytest"}, {ID: "b", Kind: KindEdit, Paths: []string{"/w/x.go"}}}
		for _, c := range ExtractClaims(text) {
			if c.Text == "" || c.Kind == "" {
				t.Fatalf("empty claim %+v", c)
			}
			_ = linkClaim(c, turn, "")
		}
	})
}
