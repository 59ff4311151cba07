package transcript

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
)

// Found is one transcript file discovery turned up.
type Found struct {
	Path      string    `json:"path"`
	Format    Format    `json:"format"`
	Agent     string    `json:"agent"`
	SessionID string    `json:"session_id,omitempty"`
	Cwd       string    `json:"cwd,omitempty"`
	FirstAt   time.Time `json:"first_at,omitzero"`
	LastAt    time.Time `json:"last_at,omitzero"`
	Subagent  bool      `json:"subagent,omitempty"` // a subagent's file; ParseFile of its session reads it too
}

// discoverSlack widens the window for clocks and for files flushed a little
// after the traced command exited.
const discoverSlack = 2 * time.Minute

// Discover finds the transcripts agents wrote under home while working in
// cwd between from and to, where their profiles (agent.Profile.Transcripts)
// say they write them: Claude Code's ~/.claude/projects/*/ (with subagent
// files), Codex's $CODEX_HOME or ~/.codex/sessions/YYYY/MM/DD/, Gemini
// CLI's ~/.gemini/tmp/*/chats/. A file matches when its recorded
// working directory is cwd or below it (Gemini: its project directory is
// cwd's) and its first-to-last timestamps overlap [from, to]. A zero from or
// to leaves that side open; an empty cwd matches any. Only regular files
// are read: a FIFO or device where a transcript would be is passed over.
func Discover(home, cwd string, from, to time.Time) ([]Found, error) {
	return DiscoverContext(context.Background(), home, cwd, from, to)
}

// DiscoverContext is Discover, stopping with ctx's error once ctx is done.
func DiscoverContext(ctx context.Context, home, cwd string, from, to time.Time) ([]Found, error) {
	if home == "" {
		return nil, errors.New("discover transcripts: no home directory")
	}
	cwd = cleanDir(cwd)
	var cands []string
	for _, prof := range agent.All() {
		for _, loc := range prof.Transcripts {
			cands = append(cands, locate(home, loc)...)
		}
	}

	var out []Found
	for _, p := range uniqueStrings(cands...) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("discover transcripts: %w", err)
		}
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		if err := isRegular(p, st); err != nil {
			slog.Warn("transcript discovery passed over a file", "error", err)
			continue
		}
		if !from.IsZero() && st.ModTime().Before(from.Add(-discoverSlack)) {
			continue // not written during the window
		}
		f, err := summarize(p)
		if err != nil {
			continue
		}
		if f.LastAt.IsZero() {
			f.LastAt = st.ModTime()
		}
		if f.FirstAt.IsZero() {
			f.FirstAt = f.LastAt
		}
		if !overlaps(f.FirstAt, f.LastAt, from, to) || !matchesCwd(f, p, cwd) {
			continue
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b Found) int { return a.FirstAt.Compare(b.FirstAt) })
	return out, nil
}

// locate returns the files below loc's roots that its globs match.
func locate(home string, loc agent.Location) []string {
	var out []string
	for _, root := range loc.Dirs(home, nil) {
		for _, g := range loc.Globs {
			if name, ok := strings.CutPrefix(g, "**/"); ok {
				_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err != nil {
						return nil
					}
					if m, _ := filepath.Match(name, d.Name()); m && !d.IsDir() {
						out = append(out, p)
					}
					return nil
				})
				continue
			}
			m, _ := filepath.Glob(filepath.Join(root, g))
			out = append(out, m...)
		}
	}
	return out
}

func cleanDir(d string) string {
	if d == "" {
		return ""
	}
	return filepath.Clean(d)
}

func overlaps(first, last, from, to time.Time) bool {
	if !to.IsZero() && first.After(to.Add(discoverSlack)) {
		return false
	}
	if !from.IsZero() && last.Before(from.Add(-discoverSlack)) {
		return false
	}
	return true
}

func matchesCwd(f Found, path, cwd string) bool {
	if cwd == "" {
		return true
	}
	switch f.Agent {
	case "gemini":
		// Gemini records no cwd; its project directory is named for it:
		// the SHA-256 of the project root (older) or a slug with a
		// .project_root file holding the root (newer).
		proj := filepath.Dir(filepath.Dir(path))
		if f.Subagent {
			proj = filepath.Dir(proj)
		}
		sum := sha256.Sum256([]byte(cwd))
		if filepath.Base(proj) == hex.EncodeToString(sum[:]) {
			return true
		}
		if root, err := readHead(filepath.Join(proj, ".project_root"), 64<<10); err == nil {
			return cleanDir(strings.TrimSpace(string(root))) == cwd
		}
		return false
	}
	if f.Cwd == "" {
		return false
	}
	c := cleanDir(f.Cwd)
	return c == cwd || strings.HasPrefix(c, cwd+string(filepath.Separator))
}

// summarize reads a file's head and tail, not the whole file, for what
// discovery shows.
func summarize(path string) (Found, error) {
	head, err := readHead(path, sniffSize)
	if err != nil {
		return Found{}, err
	}
	format := Sniff(head)
	if format == "" {
		return Found{}, unknownFormatError(path)
	}
	f := Found{Path: path, Format: format, Agent: agentFor(format)}
	switch format {
	case FormatClaudeCode, FormatClaudeStream:
		f.SessionID = firstNonEmpty(firstField(head, "sessionId"), firstField(head, "session_id"))
		f.Cwd = firstField(head, "cwd")
		f.Subagent = strings.HasPrefix(filepath.Base(path), "agent-")
	case FormatCodex:
		f.SessionID = codexHeadID(head)
		f.Cwd = firstField(head, "cwd")
	case FormatGeminiJSON, FormatGeminiJSONL:
		f.SessionID = firstField(head, "sessionId")
		f.Subagent = !strings.HasPrefix(filepath.Base(path), "session-")
	}
	f.FirstAt = parseTime(firstNonEmpty(firstField(head, "startTime"), firstField(head, "timestamp")))
	tail, err := readTail(path, 256<<10)
	if err == nil {
		f.LastAt = latest(parseTime(lastField(tail, "timestamp")), parseTime(lastField(tail, "lastUpdated")))
	}
	if f.LastAt.Before(f.FirstAt) {
		f.LastAt = f.FirstAt
	}
	return f, nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

var reCodexMetaID = regexp.MustCompile(`"type"\s*:\s*"session_meta"\s*,\s*"payload"\s*:\s*\{\s*"id"\s*:\s*"([^"]+)"`)

func codexHeadID(head []byte) string {
	if m := reCodexMetaID.FindSubmatch(head); m != nil {
		return string(m[1])
	}
	return firstField(head, "id")
}

// firstField and lastField find a string field by name in raw JSON text.
// They serve discovery, which must not parse whole files.
func firstField(data []byte, name string) string {
	re := fieldRE(name)
	if m := re.FindSubmatch(data); m != nil {
		return unquote(m[1])
	}
	return ""
}

func lastField(data []byte, name string) string {
	re := fieldRE(name)
	all := re.FindAllSubmatch(data, -1)
	if len(all) == 0 {
		return ""
	}
	return unquote(all[len(all)-1][1])
}

func fieldRE(name string) *regexp.Regexp {
	return regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `"\s*:\s*("(?:[^"\\]|\\.)*")`)
}

func unquote(q []byte) string {
	var s string
	if json.Unmarshal(q, &s) != nil {
		return ""
	}
	return s
}
