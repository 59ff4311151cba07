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
// CLI's ~/.gemini/tmp/*/chats/, mini-swe-agent's
// ~/.config/mini-swe-agent/last_mini_run.traj.json. A file matches when its
// recorded working directory is cwd or below it (Gemini: its project
// directory is cwd's; a location's AnyCwd: one that records none matches
// any) and its first-to-last timestamps overlap [from, to]. A zero from or
// to leaves that side open; an empty cwd matches any. Only regular files
// are read: a FIFO or device where a transcript would be is passed over.
func Discover(home, cwd string, from, to time.Time) ([]Found, error) {
	return DiscoverContext(context.Background(), home, cwd, from, to)
}

// DiscoverContext is Discover, stopping with ctx's error once ctx is done.
func DiscoverContext(ctx context.Context, home, cwd string, from, to time.Time) ([]Found, error) {
	return discoverIn(ctx, home, nil, cwd, from, to)
}

// discoverIn is DiscoverContext with getenv resolving the locations'
// "$VAR" roots (nil: polygraph's own environment).
func discoverIn(ctx context.Context, home string, getenv func(string) string, cwd string, from, to time.Time) ([]Found, error) {
	if home == "" {
		return nil, errors.New("discover transcripts: no home directory")
	}
	var cands []candidate
	for _, prof := range agent.All() {
		for _, loc := range prof.Transcripts {
			for _, p := range locate(home, getenv, loc, maxCandidates-len(cands)) {
				cands = append(cands, candidate{path: p, anyCwd: loc.AnyCwd})
			}
		}
	}
	if len(cands) >= maxCandidates {
		slog.Warn(fmt.Sprintf("transcript discovery looked at the first %d files under %s only (the agents' transcript directories hold more)", maxCandidates, home))
	}
	return discoverFiles(ctx, cands, cleanDir(cwd), from, to)
}

// maxCandidates bounds the files one discovery looks at: the agents'
// transcript directories are the traced tree's to fill, and each file
// looked at costs a stat and a read of its head and tail.
const maxCandidates = 20000

// candidate is a file discovery looks at; anyCwd is its location's AnyCwd.
type candidate struct {
	path   string
	anyCwd bool
}

// discoverFiles keeps those of cands that are transcripts written in the
// window for cwd, by first time.
func discoverFiles(ctx context.Context, cands []candidate, cwd string, from, to time.Time) ([]Found, error) {
	var out []Found
	seen := map[string]bool{}
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("discover transcripts: %w", err)
		}
		p := c.path
		if seen[p] {
			continue
		}
		seen[p] = true
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
		if !overlaps(f.FirstAt, f.LastAt, from, to) || !matchesCwd(f, p, cwd, c.anyCwd) {
			continue
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b Found) int { return a.FirstAt.Compare(b.FirstAt) })
	return out, nil
}

// DiscoverCommand is DiscoverContext plus the transcripts the traced
// command line names itself: the files named by the OutputFlags of the
// transcript locations of the agents argv runs (mini-swe-agent's
// -o/--output FILE), relative to cwd. The command named them, so their
// working directory is not asked. getenv resolves the locations' "$VAR"
// roots: the variables the agent ran with (event.Process.Env); nil reads
// polygraph's own environment.
func DiscoverCommand(ctx context.Context, argv []string, home string, getenv func(string) string, cwd string, from, to time.Time) ([]Found, error) {
	found, err := discoverIn(ctx, home, getenv, cwd, from, to)
	if err != nil {
		return nil, err
	}
	var named []candidate
	for _, prof := range agent.All() {
		if !prof.Runs(argv) {
			continue
		}
		for _, loc := range prof.Transcripts {
			for _, p := range loc.Outputs(argv, cwd) {
				if !slices.ContainsFunc(found, func(f Found) bool { return f.Path == p }) {
					named = append(named, candidate{path: p, anyCwd: true})
				}
			}
		}
	}
	if len(named) == 0 {
		return found, nil
	}
	more, err := discoverFiles(ctx, named, "", from, to)
	if err != nil {
		return nil, err
	}
	found = append(found, more...)
	slices.SortStableFunc(found, func(a, b Found) int { return a.FirstAt.Compare(b.FirstAt) })
	return found, nil
}

// DiscoverFiles is discovery of files known by name (a session that says
// where its agent wrote, like the demo's): those of paths that are
// transcripts whose timestamps overlap [from, to], whatever cwd they
// record. A path that is missing or not a regular file is passed over.
func DiscoverFiles(ctx context.Context, paths []string, from, to time.Time) ([]Found, error) {
	cands := make([]candidate, len(paths))
	for i, p := range paths {
		cands[i] = candidate{path: p, anyCwd: true}
	}
	return discoverFiles(ctx, cands, "", from, to)
}

// locate returns the files below loc's roots that its globs match, at
// most limit of them.
func locate(home string, getenv func(string) string, loc agent.Location, limit int) []string {
	var out []string
	for _, root := range loc.Dirs(home, getenv) {
		for _, g := range loc.Globs {
			if len(out) >= limit {
				return out[:max(limit, 0)]
			}
			if name, ok := strings.CutPrefix(g, "**/"); ok {
				_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if len(out) >= limit {
						return fs.SkipAll
					}
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
	return out[:min(len(out), max(limit, 0))]
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

func matchesCwd(f Found, path, cwd string, anyCwd bool) bool {
	if cwd == "" || anyCwd && f.Cwd == "" {
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
	case FormatMini:
		f.Cwd = firstField(head, "cwd")
		f.FirstAt = miniTime(firstTimestamp(head))
		if tail, err := readTail(path, 256<<10); err == nil {
			f.LastAt = miniTime(lastTimestamp(tail))
		}
		if f.LastAt.Before(f.FirstAt) {
			f.LastAt = f.FirstAt
		}
		return f, nil
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

var reNumTimestamp = regexp.MustCompile(`"timestamp"\s*:\s*([0-9]+(?:\.[0-9]+)?)`)

// firstTimestamp and lastTimestamp find mini-swe-agent's numeric
// "timestamp" fields (Unix seconds) in raw JSON text.
func firstTimestamp(data []byte) *float64 {
	if m := reNumTimestamp.FindSubmatch(data); m != nil {
		return parseFloat(m[1])
	}
	return nil
}

func lastTimestamp(data []byte) *float64 {
	all := reNumTimestamp.FindAllSubmatch(data, -1)
	if len(all) == 0 {
		return nil
	}
	return parseFloat(all[len(all)-1][1])
}

func parseFloat(b []byte) *float64 {
	var v float64
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return &v
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
