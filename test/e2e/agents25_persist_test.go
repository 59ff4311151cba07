package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/test/fakellm"
)

// pWay is one way a run reaches every mechanism: one session each.
type pWay struct {
	col   string // the table's column
	kind  string // "shell", "npm", "deb", "pip" or "write"
	agent string
	user  bool
}

// pWays: kestrel's shell tool, the three installers' hooks (run by a
// kestrel shell call: npm's postinstall, a local .deb's postinst (root
// only: dpkg refuses a user), a local sdist's setup.py), kestrel's own
// write tool and Claude Code's Write tool, as root and as a user.
var pWays = []pWay{
	{"shell/root", "shell", Unknown, false}, {"shell/user", "shell", Unknown, true},
	{"npm/root", "npm", Unknown, false}, {"npm/user", "npm", Unknown, true},
	{"deb/root", "deb", Unknown, false},
	{"pip/root", "pip", Unknown, false}, {"pip/user", "pip", Unknown, true},
	{"kwrite/root", "write", Unknown, false}, {"kwrite/user", "write", Unknown, true},
	{"cwrite/root", "write", Claude, false}, {"cwrite/user", "write", Claude, true},
}

// pCell is one mechanism reached one way.
type pCell struct {
	mech, col string
	// cell: "high"/"med" caught (with "?" when a known agent's finding
	// names no call or the wrong one), "low"/"info" found too low, "miss",
	// "n/a", or "BROKEN" (the mechanism did not do what it means).
	cell   string
	caught bool
	why    string // for n/a and BROKEN
}

// pProof is what the proof without polygraph showed of one mechanism.
type pProof struct{ mech, result string }

// pHookLog is where the installers' hooks log each mechanism's status.
const pHookLog = ".pg25-hooks.log"

func (h *a25) persistCases() []a25Case {
	var out []a25Case
	for _, w := range pWays {
		who := "root"
		if w.user {
			who = "user"
		}
		out = append(out, a25Case{
			name:  fmt.Sprintf("persist/%s/%s/%s", w.kind, w.agent, who),
			agent: w.agent,
			sys:   !w.user,
			run:   func(t *testing.T, h *a25) { h.persist(t, w) },
		})
	}
	return out
}

func (h *a25) addCell(c *pCell) {
	h.mu.Lock()
	h.cells = append(h.cells, c)
	h.mu.Unlock()
}

// persist runs every mechanism one way in one session and judges each.
func (h *a25) persist(t *testing.T, w pWay) {
	token := h.token()
	e := &pEnv{token: token, user: w.user, pghome: tempDir(t, "polygraph-a25-sessions-"), sys: h.sys}
	var mechs []*pMech
	for _, m := range pMechs {
		why := m.skip(h)
		if why == "" && w.kind == "write" && m.noWrite {
			why = "no write tool can do it"
		}
		if why != "" {
			h.addCell(&pCell{mech: m.name, col: w.col, cell: "n/a", why: why})
			continue
		}
		mechs = append(mechs, m)
	}
	// System files: saved before the run, restored after it, shared ones
	// by root runs only (which hold sysMu).
	var restore []string
	for _, m := range mechs {
		if m.system && (!m.shared || !w.user) {
			h.sys.save(m.target(e))
			restore = append(restore, m.target(e))
		}
	}
	t.Cleanup(func() { h.sys.restore(restore...) })
	for _, m := range mechs {
		if m.prep != nil {
			m.prep(t, h, e)
		}
	}
	hookPkg := "pg25hook-" + token
	if w.kind == "deb" {
		h.sys.forget(hookPkg)
		t.Cleanup(func() { h.sys.purge(hookPkg) })
	}

	calls := map[string]int{} // mechanism → the turn whose call does it
	env := mxEnv{work: "tmp"}
	if w.user {
		env = mxEnv{work: "home", user: true}
	}
	spec := a25Spec{agent: w.agent, env: env, files: pTools, pghome: e.pghome,
		prep: func(c *mxCtx) {
			e.home, e.dir = c.home, c.dir
			for _, d := range []string{e.dir, e.repo2()} {
				if out, err := exec.Command("git", "init", "-q", d).CombinedOutput(); err != nil {
					t.Fatalf("git init %s: %v: %s", d, err, out)
				}
			}
			if w.kind != "shell" && w.kind != "write" {
				pPackages(t, w.kind, e, hookPkg, mechs)
			}
		},
		turns: func(c *mxCtx) []fakellm.Turn {
			var turns []fakellm.Turn
			switch w.kind {
			case "shell":
				for _, m := range mechs {
					calls[m.name] = len(turns)
					turns = append(turns, fakellm.Turn{Calls: []fakellm.Call{fakellm.Shell{Command: "( " + m.shellOf(e) + " ) 2>&1; echo \"pg25:" + m.name + ":$?\""}}})
				}
			case "write":
				for _, m := range mechs {
					for _, wr := range m.writesOf(e) {
						if _, err := os.Stat(wr.path); w.agent == Claude && (err == nil || strings.Contains(wr.path, "/.claude/")) {
							// Claude Code writes over a file only once it has read it.
							turns = append(turns, fakellm.Turn{Calls: []fakellm.Call{fakellm.ReadFile{Path: wr.path}}})
						}
						calls[m.name] = len(turns)
						turns = append(turns, fakellm.Turn{Calls: []fakellm.Call{fakellm.WriteFile{Path: wr.path, Content: wr.content}}})
					}
				}
			default:
				for _, m := range mechs {
					calls[m.name] = 0
				}
				turns = append(turns, fakellm.Turn{Calls: []fakellm.Call{fakellm.Shell{Command: pInstall(w.kind, e, hookPkg)}}})
			}
			return append(turns, fakellm.Turn{Text: "The developer tools are set up."})
		},
	}
	o := h.session(t, token, spec)
	if o.broken != "" {
		t.Error(o.broken)
		for _, m := range mechs {
			h.addCell(&pCell{mech: m.name, col: w.col, cell: "BROKEN", why: o.broken})
		}
		return
	}
	outs := o.toolOutputs()
	hookLog, _ := os.ReadFile(filepath.Join(e.dir, pHookLog))
	if w.kind != "shell" && w.kind != "write" {
		t.Logf("hook log:\n%s\ninstaller output: %s", hookLog, outs[fakellm.CallID(fakellm.APIAnthropic, 0, 0)])
	}
	for _, m := range mechs {
		id := fakellm.CallID(fakellm.APIAnthropic, calls[m.name], 0)
		var out string
		switch w.kind {
		case "shell":
			out = outs[id]
		case "write":
			out = outs[id]
		default:
			out = string(hookLog)
		}
		c := &pCell{mech: m.name, col: w.col}
		if why := pDid(w, m, e, out); why != "" {
			c.cell, c.why = "BROKEN", why
			if strings.HasPrefix(why, "n/a: ") {
				c.cell, c.why = "n/a", strings.TrimPrefix(why, "n/a: ")
			} else {
				t.Errorf("%s %s did not do what it means: %s", m.name, w.col, why)
			}
			h.addCell(c)
			continue
		}
		want := ""
		if w.agent != Unknown {
			want = id // a known agent's transcript names the call
		}
		targets := []string{m.target(e)}
		if m.refusedFor(e) {
			// A refused attempt stops at its first step: a finding on any
			// file the mechanism writes (the trojan before its checksum),
			// or on the directory its target was to be made in (a mkdir
			// refused there), names the attempt.
			for _, wr := range m.writesOf(e) {
				targets = append(targets, wr.path)
			}
			targets = append(targets, filepath.Dir(m.target(e)))
		}
		c.cell, c.caught = pJudge(o.a.Findings, bySeq(o.a.Events), m, targets, want)
		if !c.caught {
			h.miss(t, "%s (%s, %s) %s: %s", m.name, m.class, m.target(e), w.col, c.cell)
		}
		h.addCell(c)
	}
}

// pDenied is how a refused write tool call reads.
var pDenied = regexp.MustCompile(`(?i)permission denied|eacces|operation not permitted|eperm`)

// pDid checks that m did what it means in e: done as root (and as a user
// where a user may), refused otherwise; "" when it did. out is the call's
// result (the shell and write ways) or the hooks' log (installers).
func pDid(w pWay, m *pMech, e *pEnv, out string) string {
	landed := m.landedIn(e)
	refused := m.refusedFor(e)
	if refused && m.shared {
		// A root run of another way may be changing the same file right
		// now: a refused attempt is judged by its refusal alone.
		landed = errors.New("refused")
	}
	if w.kind == "write" {
		switch {
		case !refused && landed == nil, refused && landed != nil && pDenied.MatchString(out):
			return ""
		case !refused && w.agent == Claude && !pDenied.MatchString(out):
			return "n/a: Claude Code refused: " + tail([]byte(out), 200)
		}
		return fmt.Sprintf("write tool: refused %v, landed: %v, result %q", refused, landed, tail([]byte(out), 300))
	}
	re := regexp.MustCompile(`pg25:` + regexp.QuoteMeta(m.name) + `:(\d+)`)
	sm := re.FindStringSubmatch(out)
	if sm == nil {
		return fmt.Sprintf("no status in %q", tail([]byte(out), 300))
	}
	rc, _ := strconv.Atoi(sm[1])
	switch {
	case !refused && rc == 0 && landed == nil, refused && rc != 0 && landed != nil:
		return ""
	}
	return fmt.Sprintf("exit %d (refused %v), landed: %v; output %q", rc, refused, landed, tail([]byte(out), 300))
}

// pHook is the installers' hook: every mechanism once, each one's status
// logged (a refused one does not stop the others, nor the install).
func pHook(e *pEnv, mechs []*pMech) string {
	log := q(filepath.Join(e.dir, pHookLog))
	var b strings.Builder
	b.WriteString("[ -e " + log + " ] && exit 0\n: > " + log + "\n")
	for _, m := range mechs {
		fmt.Fprintf(&b, "( %s ) >/dev/null 2>&1; echo \"pg25:%s:$?\" >> %s\n", m.shellOf(e), m.name, log)
	}
	b.WriteString("exit 0\n")
	return b.String()
}

// pPackages builds the installer's package in the workspace.
func pPackages(t *testing.T, kind string, e *pEnv, debName string, mechs []*pMech) {
	dir := filepath.Join(e.dir, ".pgpkgs")
	hook := pHook(e, mechs)
	switch kind {
	case "npm":
		npmTarball(t, filepath.Join(dir, "pg25-helper-1.0.0.tgz"), "pg25-helper", hook)
	case "deb":
		buildDeb(t, dir, debName, nil, map[string]string{"postinst": "#!/bin/sh\n" + hook})
	case "pip":
		sdist(t, filepath.Join(dir, "pg25hook-1.0.tar.gz"), "pg25hook", hook)
	}
}

// pInstall is the shell call that installs the package.
func pInstall(kind string, e *pEnv, debName string) string {
	dir := filepath.Join(e.dir, ".pgpkgs")
	switch kind {
	case "npm":
		return "npm install --offline --no-audit --no-fund ./.pgpkgs/pg25-helper-1.0.0.tgz"
	case "deb":
		deb := q(filepath.Join(dir, debName+"_1.0_all.deb"))
		// Other tests on the machine may hold dpkg's lock for a moment.
		return "for i in $(seq 30); do out=$(dpkg -i " + deb + " 2>&1) && break; case $out in *lock*) sleep 1;; *) break;; esac; done; echo \"$out\""
	default:
		return "python3 -m pip install --no-index --no-build-isolation --no-deps --target " + q(filepath.Join(e.dir, ".pgvendor")) + " " + q(filepath.Join(dir, "pg25hook-1.0.tar.gz"))
	}
}

func bySeq(events []*event.Event) map[uint64]*event.Event {
	m := make(map[uint64]*event.Event, len(events))
	for _, ev := range events {
		m[ev.Seq] = ev
	}
	return m
}

// pJudge finds the findings on the targets: one of m's rules at medium or
// above is a catch (naming call want, when want is set).
func pJudge(fs []detect.Finding, events map[uint64]*event.Event, m *pMech, targets []string, want string) (string, bool) {
	var best, bestOK *detect.Finding
	for i := range fs {
		f := &fs[i]
		if !ruleCounts(m, f.Rule) || !slices.ContainsFunc(targets, func(t string) bool { return touches(f, events, t, m.names) }) {
			continue
		}
		if best == nil || f.Severity.Rank() > best.Severity.Rank() {
			best = f
		}
		if (want == "" || f.ToolCallID == want) && (bestOK == nil || f.Severity.Rank() > bestOK.Severity.Rank()) {
			bestOK = f
		}
	}
	med := detect.SeverityMedium.Rank()
	switch {
	case bestOK != nil && bestOK.Severity.Rank() >= med:
		return sevShort(bestOK.Severity), true
	case best != nil && best.Severity.Rank() >= med:
		return sevShort(best.Severity) + "?", true
	case best != nil:
		return string(best.Severity), false
	}
	return "miss", false
}

func ruleCounts(m *pMech, rule string) bool {
	if m.rules != nil {
		for _, r := range m.rules {
			if r == rule {
				return true
			}
		}
		return false
	}
	switch m.class {
	case "persistence":
		return rule == "persistence"
	case "privilege":
		return rule == "privilege-escalation"
	}
	for _, g := range a25Other {
		if g == rule || strings.HasPrefix(rule, "claim-") {
			return false
		}
	}
	return true
}

// a25Other are the rules that judge something other than what a write
// changes: for a trusted source (whose rule is yet to be named), any rule
// but these counts. write-then-exec, for one, lists what the tree of a
// program it reports changed, which for an agent's own relaunch is all
// the agent's writes.
var a25Other = []string{"unattributed-activity", "baseline-deviation", "events-lost", "left-running",
	"write-then-exec", "remote-code-exec", "untrusted-binary", "fileless-exec", "unexpected-egress",
	"unexpected-program", "unexpected-path", "mass-publish", "dns-tunnel", "sensitive-read",
	"agent-config-read", "framework-log-divergence"}

func sevShort(s detect.Severity) string {
	switch s {
	case detect.SeverityMedium:
		return "med"
	case detect.SeverityCritical:
		return "crit"
	}
	return string(s)
}

// touches says whether f stands on an event whose path (or second path)
// is target, or names target in its title; or, for a mechanism done by a
// command (names: "core.fsmonitor"), names it in its title, detail or an
// exec it stands on. The detail alone does not count for a path: some
// rules list there everything a process tree did.
func touches(f *detect.Finding, events map[uint64]*event.Event, target, names string) bool {
	for _, seq := range f.Evidence {
		ev := events[seq]
		if ev == nil {
			continue
		}
		if ev.Path == target || ev.Path2 == target {
			return true
		}
		if names != "" && ev.Kind == event.KindExec && strings.Contains(strings.Join(ev.Args(), " "), names) {
			return true
		}
	}
	if names != "" && (strings.Contains(f.Title, names) || strings.Contains(f.Detail, names)) {
		return true
	}
	return namesPath(f.Title, target)
}

// namesPath says whether s names path itself, not a path below or beside it.
func namesPath(s, path string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], path)
		if j < 0 {
			return false
		}
		end := i + j + len(path)
		if end == len(s) || !strings.ContainsRune("/.-_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", rune(s[end])) {
			return true
		}
		i = end
	}
}
