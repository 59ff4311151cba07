package correlate

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/accounts"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/transcript"
)

// callInfo is one tool call with what matching needs.
type callInfo struct {
	tc         *transcript.ToolCall
	act        *CallActivity
	start, end time.Time // as the transcript says (end: the result, or the last poll's)
	open       bool      // no result recorded: the window runs to the end of the session
	shell      *cmdMatcher
	paths      pathSet
	hosts      []string // fetch calls: the URLs' hosts
	search     bool
	roots      int
	seenRead   map[string]bool
	seenWrite  map[string]bool
	seenDNS    map[string]bool

	// lead and until are start and end widened by the slack (until only
	// for a closed call), set by newCallIndex: window checks run per event.
	lead, until time.Time
}

// pathSet is what a call names on disk, resolved to absolute paths.
type pathSet struct {
	exact   []string // files the call names
	dirs    []string // directories it searches or lists: everything inside matches, weakly
	parents []string // directories of the files it writes: the tool opens them too
}

// prepareCalls prepares every tool call of tr for matching, in transcript
// order, and adds its activity to res.
func prepareCalls(tr *transcript.Transcript, meta manifest.Meta, res *Result) []*callInfo {
	if tr == nil {
		return nil
	}
	byID := map[string]*callInfo{}
	var out []*callInfo
	for _, tc := range tr.ToolCalls {
		if tc == nil {
			continue
		}
		act := &CallActivity{Call: tc, Events: []uint64{}}
		res.Calls = append(res.Calls, act)
		if tc.ID != "" {
			res.ByCall[tc.ID] = act
		}
		ci := newCallInfo(tc, act, tr, meta)
		if tc.ID != "" {
			byID[tc.ID] = ci
		}
		out = append(out, ci)
	}
	// A background process's later output reaches the transcript through
	// the calls that poll it: its window lasts until the last poll.
	for _, ci := range out {
		if t := byID[ci.tc.Polls]; t != nil && ci.tc.Polls != ci.tc.ID {
			switch {
			case ci.open:
				t.open = true
			case !t.open && ci.end.After(t.end):
				t.end = ci.end
			}
		}
	}
	return out
}

// newCallInfo prepares one call: its window and what it names (the
// command, the paths, the hosts).
func newCallInfo(tc *transcript.ToolCall, act *CallActivity, tr *transcript.Transcript, meta manifest.Meta) *callInfo {
	ci := &callInfo{tc: tc, act: act, start: tc.StartedAt, end: tc.EndedAt, open: tc.EndedAt.IsZero(),
		seenRead: map[string]bool{}, seenWrite: map[string]bool{}, seenDNS: map[string]bool{}}
	if !ci.open && !ci.start.IsZero() && ci.end.Before(ci.start) {
		ci.start, ci.end = ci.end, ci.start
	}
	cwd := firstNonEmpty(tc.Cwd, tr.Cwd, meta.Cwd)
	project := firstNonEmpty(meta.Cwd, tr.Cwd)
	home := meta.Home
	switch {
	case tc.Kind == transcript.KindShell && !tc.Rejected:
		ci.shell = newCmdMatcher(tc.Command, tc.Argv)
		for _, w := range shellTokens(tc.Command) {
			if p := absPath(w, cwd, home); p != "" && wordPath(w, p, cwd, home) {
				ci.paths.exact = appendNew(ci.paths.exact, p)
			}
		}
	case tc.Kind == transcript.KindSearch:
		ci.search = true
		for _, p := range tc.Paths {
			if r := absPath(p, cwd, home); r != "" {
				ci.paths.dirs = appendNew(ci.paths.dirs, r)
			}
		}
		if len(ci.paths.dirs) == 0 && cwd != "" {
			ci.paths.dirs = []string{cwd}
		}
	case tc.Kind == transcript.KindFetch:
		for _, u := range tc.URLs {
			if h := urlHost(u); h != "" {
				ci.hosts = appendNew(ci.hosts, h)
			}
		}
	}
	if tc.Kind != transcript.KindShell && tc.Kind != transcript.KindSearch {
		for _, p := range tc.Paths {
			if r := absPath(p, cwd, home); r != "" {
				ci.paths.exact = appendNew(ci.paths.exact, r)
				// The tool opens the file's directory too, unless that
				// is the project or the home (or above): agents open
				// those all the time for themselves.
				if d := filepath.Dir(r); !under(project, d) && !under(home, d) {
					ci.paths.parents = appendNew(ci.paths.parents, d)
				}
			}
		}
	}
	return ci
}

// firstCallStart is when the first of calls started: the model API was
// reached before (the call came from it).
func firstCallStart(calls []*callInfo) time.Time {
	var first time.Time
	for _, ci := range calls {
		if !ci.start.IsZero() && (first.IsZero() || ci.start.Before(first)) {
			first = ci.start
		}
	}
	return first
}

// wordPath reports whether a word of a shell command, resolved to p, may
// name a file the agent checks before running the command. Options, the
// working directory, the home and device or kernel files do not.
func wordPath(w, p, cwd, home string) bool {
	if strings.HasPrefix(w, "-") || w == "." || w == ".." || w == "~" || p == cwd || p == home || p == "/" {
		return false
	}
	for _, pre := range []string{"/dev/", "/proc/", "/sys/"} {
		if strings.HasPrefix(p, pre) {
			return false
		}
	}
	return true
}

// absPath makes p, as a tool call names it, absolute against cwd,
// expanding a leading ~.
func absPath(p, cwd, home string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		var ok bool
		if p, ok = accounts.InHome(p, home); !ok {
			return ""
		}
	case !filepath.IsAbs(p):
		if cwd == "" {
			return ""
		}
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

func urlHost(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	u, _, _ = strings.Cut(u, "/")
	if at := strings.LastIndexByte(u, '@'); at >= 0 {
		u = u[at+1:]
	}
	if strings.HasPrefix(u, "[") {
		if j := strings.IndexByte(u, ']'); j > 0 {
			return strings.ToLower(u[1:j])
		}
	}
	if h, _, ok := strings.Cut(u, ":"); ok {
		u = h
	}
	return strings.ToLower(u)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
