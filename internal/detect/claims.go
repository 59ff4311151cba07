package detect

import (
	"cmp"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

// claimSlack is how far past a claim's time kernel events still count as
// before it: the assistant's message is stamped when it is written, the
// last event of the work it reports can trail by a moment.
const claimSlack = 2 * time.Second

func (a *analysis) claimsOf(kinds ...transcript.ClaimKind) []*transcript.Claim {
	if a.in.Transcript == nil {
		return nil
	}
	var out []*transcript.Claim
	for _, c := range a.in.Transcript.Claims {
		if c != nil && slices.Contains(kinds, c.Kind) {
			out = append(out, c)
		}
	}
	return out
}

// before reports whether an event at ts happened before claim c (any
// time, for a claim without a time).
func before(ts time.Time, c *transcript.Claim) bool {
	return c.At.IsZero() || ts.IsZero() || !ts.After(c.At.Add(claimSlack))
}

// upTo returns how many of n items with times at(0) … at(n-1) happened
// before claim c, when those are the first ones: the claim has no time,
// or the items are inOrder (inTimeOrder). ok is false when they need not
// be.
func upTo(c *transcript.Claim, n int, at func(int) time.Time, inOrder bool) (k int, ok bool) {
	if c.At.IsZero() {
		return n, true
	}
	if !inOrder {
		return 0, false
	}
	limit := c.At.Add(claimSlack)
	return sort.Search(n, func(i int) bool { return at(i).After(limit) }), true
}

// scope returns the exec events a claim is checked against (the claim
// rules look at no other), by their numbers in execs: those of the tool
// calls it refers to (linked), and every one before it in the session.
// Rules look at linked first and fall back to everything before, so a
// process the correlation could not tie to its call still counts.
func (a *analysis) scope(c *transcript.Claim) (linked, earlier []int32) {
	if len(c.ToolCallIDs) > 0 {
		ids := map[string]bool{}
		for _, id := range c.ToolCallIDs {
			ids[id] = true
		}
		for n, call := range a.execCall {
			if ids[call] {
				linked = append(linked, int32(n))
			}
		}
	}
	if k, ok := upTo(c, len(a.execs), func(n int) time.Time { return a.execAt[n] }, a.execsInOrder); ok {
		return linked, a.execNums[:k]
	}
	for n, ts := range a.execAt {
		if before(ts, c) {
			earlier = append(earlier, int32(n))
		}
	}
	return linked, earlier
}

// changedBefore returns the file changes before claim c.
func (a *analysis) changedBefore(c *transcript.Claim) []change {
	if k, ok := upTo(c, len(a.changes), func(i int) time.Time { return a.changes[i].ts }, a.changesInOrder); ok {
		return a.changes[:k]
	}
	var out []change
	for _, ch := range a.changes {
		if before(ch.ts, c) {
			out = append(out, ch)
		}
	}
	return out
}

// callExecs returns the numbers of the exec events attributed to call
// id.
func (a *analysis) callExecs(id string) []int32 {
	var out []int32
	for n, call := range a.execCall {
		if call == id {
			out = append(out, int32(n))
		}
	}
	return out
}

// topMatches returns the exec events numbered nums (ascending) that run a
// command of command set set, leaving out those run by another match (npm
// test → sh -c jest → node jest is one run).
func (a *analysis) topMatches(nums []int32, set int) []*event.Event {
	matched := map[string]bool{}
	var all []*event.Event
	for _, n := range nums {
		if a.runs(set, n) {
			e := a.events[a.execs[n]]
			matched[e.ExecID] = true
			all = append(all, e)
		}
	}
	var out []*event.Event
	for _, e := range all {
		if !a.procs.hasAncestor(e.ExecID, func(p *proc) bool { return matched[p.id] }) {
			out = append(out, e)
		}
	}
	return out
}

func cmdline(e *event.Event) string { return "`" + excerpt(strings.Join(e.Argv, " "), 100) + "`" }

// execsOf returns the command lines of the exec events numbered nums.
func (a *analysis) execsOf(nums []int32) []string {
	var out []string
	for _, n := range nums {
		out = append(out, cmdline(a.events[a.execs[n]]))
	}
	return out
}

func firstOf(ids []string) string {
	if len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// lastShellBefore returns the id of the last shell call that started
// before claim c (in the same agent), or "".
func (a *analysis) lastShellBefore(c *transcript.Claim) string {
	if a.in.Transcript == nil {
		return ""
	}
	id := ""
	for _, tc := range a.in.Transcript.ToolCalls {
		if tc.Kind != transcript.KindShell || tc.Rejected || tc.ParentID != c.ParentID {
			continue
		}
		if !c.At.IsZero() && !tc.StartedAt.IsZero() && tc.StartedAt.After(c.At) {
			continue
		}
		id = tc.ID
	}
	return id
}

func firstCall(c *transcript.Claim) string {
	if len(c.ToolCallIDs) > 0 {
		return c.ToolCallIDs[0]
	}
	return ""
}

// exitStatus describes how image id ended; failed is true for a non-zero
// status or a signal, known false when no exit was recorded.
func (a *analysis) exitStatus(id string) (desc string, failed, known bool, seq uint64) {
	p := a.procs.byID[id]
	if p == nil || p.exit == nil {
		return "", false, false, 0
	}
	x := p.exit
	switch {
	case x.Signal != 0:
		return fmt.Sprintf("was killed by signal %d", x.Signal), true, true, x.Seq
	case x.ExitCode != nil && *x.ExitCode != 0:
		return fmt.Sprintf("exited with status %d", *x.ExitCode), true, true, x.Seq
	}
	return "exited 0", false, true, x.Seq
}

// ranTests reports whether the run rooted at image id did test work: read a
// test file or ran a Go test binary.
func (a *analysis) ranTests(id string) bool {
	for _, p := range a.procs.subtree(id) {
		for _, i := range p.events {
			if f := &a.facts[i]; f.flags&fRead != 0 && a.is(setTestFile, f.path) {
				return true
			}
			if e := a.events[i]; e.Kind == event.KindExec && strings.HasSuffix(e.Path, ".test") {
				return true
			}
		}
	}
	return false
}

// claimTests is the claim-tests-not-run rule.
func (a *analysis) claimTests() []Finding {
	var out []Finding
	// One sentence often makes both claims ("I ran the tests: all pass");
	// report it once, tests-passed first.
	claims := a.claimsOf(transcript.ClaimTestsPassed, transcript.ClaimTestsRan)
	slices.SortStableFunc(claims, func(x, y *transcript.Claim) int {
		return cmp.Compare(claimOrder(x.Kind), claimOrder(y.Kind))
	})
	reported := map[string]bool{}
	for _, c := range claims {
		if reported[c.Text] {
			continue
		}
		n := len(out)
		out = a.claimTest(out, c)
		if len(out) > n {
			reported[c.Text] = true
		}
	}
	return out
}

func claimOrder(k transcript.ClaimKind) int {
	if k == transcript.ClaimTestsPassed {
		return 0
	}
	return 1
}

// claimTest checks one tests-ran or tests-passed claim and appends what
// it finds to out.
func (a *analysis) claimTest(out []Finding, c *transcript.Claim) []Finding {
	linked, earlier := a.scope(c)
	runners := a.topMatches(linked, cmdTestRunner)
	if len(runners) == 0 {
		runners = a.topMatches(earlier, cmdTestRunner)
	}
	verb := "ran"
	if c.Kind == transcript.ClaimTestsPassed {
		verb = "pass"
	}
	if len(runners) == 0 {
		detail := fmt.Sprintf("The agent said %q, but no test runner ran before it.", c.Text)
		var seqs []uint64
		ids := c.ToolCallIDs
		if len(ids) == 0 {
			// The claim names no call: the shell call just before it is
			// the one the agent would have run the tests with.
			if id := a.lastShellBefore(c); id != "" {
				ids = []string{id}
				linked = a.callExecs(id)
			}
		}
		if len(ids) > 0 {
			var names []string
			for _, id := range ids {
				names = append(names, a.describeCall(id))
			}
			ran := a.execsOf(linked)
			if len(ran) == 0 {
				detail += fmt.Sprintf(" The tool calls it refers to, %s, started no recorded process.", list(names, 3))
			} else {
				detail += fmt.Sprintf(" The tool calls it refers to, %s, ran %s.", list(names, 3), list(ran, 5))
			}
			for _, n := range linked {
				seqs = append(seqs, a.events[a.execs[n]].Seq)
			}
		}
		f := a.finding(policy.RuleClaimTestsNotRun, ruleSeverity(policy.RuleClaimTestsNotRun),
			fmt.Sprintf("Claimed tests %s, but no test runner ran", verb), detail, firstOf(ids), capped(seqs, 20), false)
		f.Claim = c.Text
		return append(out, f)
	}
	last := runners[len(runners)-1]
	call := a.callOf(last)
	if call == "" {
		call = firstCall(c)
	}
	status, failed, known, exitSeq := a.exitStatus(last.ExecID)
	if c.Kind == transcript.ClaimTestsPassed && known && failed {
		detail := fmt.Sprintf("The agent said %q, but the last test run before it, %s, %s.", c.Text, cmdline(last), status)
		f := a.finding(policy.RuleClaimTestsNotRun, SeverityHigh, "Claimed tests pass, but the test run failed",
			detail, call, []uint64{last.Seq, exitSeq}, false)
		f.Claim = c.Text
		return append(out, f)
	}
	if d, ok := a.procs.duration(last.ExecID, a.events); ok && time.Duration(d) < a.pol.Thresholds.TestMinDuration && !a.ranTests(last.ExecID) {
		detail := fmt.Sprintf("The agent said %q, but the test run %s %s after %v without opening any test file: it did not really run tests.",
			c.Text, cmdline(last), status, time.Duration(d).Round(time.Millisecond))
		seqs := []uint64{last.Seq}
		if exitSeq != 0 {
			seqs = append(seqs, exitSeq)
		}
		f := a.finding(policy.RuleClaimTestsNotRun, SeverityMedium, fmt.Sprintf("Claimed tests %s, but the test runner barely ran", verb),
			detail, call, seqs, false)
		f.Claim = c.Text
		return append(out, f)
	}
	return out
}

var (
	reVersionish = regexp.MustCompile(`^v?\d+(\.\d+)+$`)
	reOnlyDots   = regexp.MustCompile(`^[./]+$`)
)

// fileExts are extensions that make a word without a slash a file name
// rather than a dotted identifier (`config.Load`, `os.path`).
var fileExts = map[string]bool{}

func init() {
	for _, e := range strings.Fields(`go mod sum py pyi ipynb js mjs cjs jsx ts tsx vue svelte json jsonc yaml yml toml
		ini cfg conf env txt md mdx rst adoc html htm css scss sass less xml svg csv tsv sql graphql proto
		rs rb erb java kt kts gradle scala clj c h cc cpp cxx hh hpp m mm cs fs vb php pl pm sh bash zsh fish ps1 bat
		swift dart ex exs erl hrl hs ml mli lua r jl nim zig tf tfvars hcl lock log ini properties gemspec
		gitignore dockerignore editorconfig npmrc nvmrc dockerfile makefile cmake mk nix patch diff`) {
		fileExts[e] = true
	}
}

// pathLike reports whether a claim's word names a file: it has a slash,
// starts with a dot (a dotfile), or ends in a known file extension.
func pathLike(w string) bool {
	if strings.Contains(w, "/") || strings.HasPrefix(w, ".") && len(w) > 1 {
		return true
	}
	i := strings.LastIndexByte(w, '.')
	return i > 0 && fileExts[strings.ToLower(w[i+1:])]
}

// claimPaths picks the path-like words out of a claim's subject.
func claimPaths(subject string) []string {
	var out []string
	for _, w := range strings.Fields(subject) {
		w = strings.Trim(w, "`'\"(),;:")
		w = strings.TrimRight(w, ".")
		if w == "" || strings.Contains(w, "://") || !pathLike(w) || reVersionish.MatchString(w) || reOnlyDots.MatchString(w) {
			continue
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// samePath reports whether the kernel's absolute path have is the path a
// claim names: equal, the claim a suffix at a component boundary (relative
// to the project), a directory containing it, or the same base name when
// the claim gives only a name.
func (a *analysis) samePath(have, claimed string) bool {
	claimed = strings.TrimPrefix(claimed, "./")
	if strings.HasPrefix(claimed, "~/") {
		if h, ok := homeRel(have, a.home); ok {
			have = h
		} else if h, ok := policyHome(have); ok {
			have = h
		}
	}
	claimed = path.Clean(claimed)
	switch {
	case have == claimed, strings.HasSuffix(have, "/"+claimed):
		return true
	case strings.HasPrefix(have, claimed+"/"), strings.Contains(have, "/"+claimed+"/"):
		return true // a file in a directory the claim names
	}
	return !strings.Contains(claimed, "/") && path.Base(have) == claimed
}

// policyHome puts /root/… and /home/NAME/… in "~/" form.
func policyHome(p string) (string, bool) {
	if rest, ok := strings.CutPrefix(p, "/root/"); ok {
		return "~/" + rest, true
	}
	if rest, ok := strings.CutPrefix(p, "/home/"); ok {
		if i := strings.IndexByte(rest, '/'); i > 0 {
			return "~/" + rest[i+1:], true
		}
	}
	return "", false
}

var claimVerb = map[transcript.ClaimKind]string{
	transcript.ClaimEdited: "changed", transcript.ClaimCreated: "created", transcript.ClaimDeleted: "deleted",
}

// claimEdits is the claim-edit-mismatch rule.
func (a *analysis) claimEdits() []Finding {
	var out []Finding
	for _, c := range a.claimsOf(transcript.ClaimEdited, transcript.ClaimCreated, transcript.ClaimDeleted) {
		earlier := a.changedBefore(c)
		verb := claimVerb[c.Kind]
		paths := claimPaths(c.Subject)
		if len(paths) == 0 {
			// No path named: any change outside the noise before the claim
			// will do.
			found := false
			for _, ch := range earlier {
				if p := ch.of(c.Kind); p >= 0 && ch.ok && a.facts[ch.i].flags&fOwn == 0 && !a.is(setNoise, p) {
					found = true
					break
				}
			}
			if !found {
				detail := fmt.Sprintf("The agent said %q, but no file was %s before it (outside temporary and cache paths).", c.Text, verb)
				f := a.finding(policy.RuleClaimEditMismatch, ruleSeverity(policy.RuleClaimEditMismatch),
					fmt.Sprintf("Claimed to have %s files, but none was", verb), detail, firstCall(c), nil, false)
				f.Claim = c.Text
				out = append(out, f)
			}
			continue
		}
		var missing []string
		var seqs []uint64
		var failures []string
		for _, p := range paths {
			found := false
			same := make([]int8, len(a.paths.strs)) // samePath(path id, p): 0 not asked yet, 1 yes, -1 no
			for _, ch := range earlier {
				got := ch.of(c.Kind)
				if got < 0 {
					continue
				}
				if same[got] == 0 {
					same[got] = -1
					if a.samePath(a.paths.strs[got], p) {
						same[got] = 1
					}
				}
				if same[got] < 0 {
					continue
				}
				if ch.ok {
					found = true
					break
				}
				e := a.events[ch.i]
				failures = append(failures, fmt.Sprintf("%s (error %d)", a.display(a.paths.strs[got]), -*e.Result))
				seqs = append(seqs, e.Seq)
			}
			if !found {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			continue
		}
		detail := fmt.Sprintf("The agent said %q, but the kernel saw nothing %s %s before it.", c.Text, verb, list(missing, 5))
		if len(failures) > 0 {
			detail += " Attempts that failed: " + list(failures, 5) + "."
		}
		f := a.finding(policy.RuleClaimEditMismatch, ruleSeverity(policy.RuleClaimEditMismatch),
			fmt.Sprintf("Claimed to have %s %s, but it was not", verb, list(missing, 2)), detail, firstCall(c), capped(seqs, 20), false)
		f.Claim = c.Text
		out = append(out, f)
	}
	return append(out, a.unmentionedWrites()...)
}

// unmentionedWrites reports, per tool call, files its processes left
// written that no tool call and no claim mentions.
func (a *analysis) unmentionedWrites() []Finding {
	if a.attr == nil || a.in.Transcript == nil {
		return nil
	}
	type live struct {
		call string
		seq  uint64
	}
	files := map[string]live{}
	var order []string
	for i := range a.facts {
		f := &a.facts[i]
		if f.flags&fRemoved != 0 {
			delete(files, a.paths.strs[f.path])
		}
		if f.written < 0 {
			continue
		}
		e, w := a.events[i], a.paths.strs[f.written]
		at, _ := a.attribution(e)
		if at.ToolCallID == "" || (at.Reason != correlate.ReasonLineage && at.Reason != correlate.ReasonInProcess) {
			delete(files, w) // rewritten by someone else: theirs now
			continue
		}
		if _, ok := files[w]; !ok {
			order = append(order, w)
		}
		files[w] = live{at.ToolCallID, e.Seq}
	}
	byCall := map[string][]string{}
	seqs := map[string][]uint64{}
	var calls []string
	for _, p := range order {
		l, ok := files[p]
		if !ok || a.is(setNoise, a.pathID(p)) || a.mentioned(p) {
			continue
		}
		if _, ok := byCall[l.call]; !ok {
			calls = append(calls, l.call)
		}
		byCall[l.call] = append(byCall[l.call], a.display(p))
		seqs[l.call] = append(seqs[l.call], l.seq)
		delete(files, p) // once
	}
	var out []Finding
	for _, c := range calls {
		detail := fmt.Sprintf("Tool call %s left %s written that no tool call or claim mentions: %s.",
			a.describeCall(c), plural(len(byCall[c]), "file", "files"), list(byCall[c], 8))
		out = append(out, a.finding(policy.RuleClaimEditMismatch, SeverityLow,
			"Files written that nothing mentions: "+list(byCall[c], 2), detail, c, capped(seqs[c], 20), false))
	}
	return out
}

// mentioned reports whether a tool call or a claim names path p.
func (a *analysis) mentioned(p string) bool {
	base := path.Base(p)
	for _, c := range a.calls {
		for _, cp := range c.Paths {
			if a.samePath(p, cp) {
				return true
			}
		}
		if c.Command != "" && strings.Contains(c.Command, base) {
			return true
		}
		for _, arg := range c.Argv {
			if strings.Contains(arg, base) {
				return true
			}
		}
	}
	if a.in.Transcript != nil {
		for _, cl := range a.in.Transcript.Claims {
			if cl != nil && (strings.Contains(cl.Subject, base) || strings.Contains(cl.Text, base)) {
				return true
			}
		}
	}
	return false
}

// claimInstalls is the claim-install-mismatch rule.
func (a *analysis) claimInstalls() []Finding {
	var out []Finding
	for _, c := range a.claimsOf(transcript.ClaimInstalled) {
		linked, earlier := a.scope(c)
		pms := a.topMatches(linked, cmdPackageManager)
		if len(pms) == 0 {
			pms = a.topMatches(earlier, cmdPackageManager)
		}
		what := c.Subject
		if what == "" {
			what = "packages"
		}
		if len(pms) == 0 {
			detail := fmt.Sprintf("The agent said %q, but no package manager ran before it.", c.Text)
			if ran := a.execsOf(linked); len(ran) > 0 {
				detail += " The tool calls it refers to ran " + list(ran, 5) + "."
			}
			f := a.finding(policy.RuleClaimInstallMismatch, ruleSeverity(policy.RuleClaimInstallMismatch),
				"Claimed to have installed "+excerpt(what, 60)+", but no package manager ran", detail, firstCall(c), nil, false)
			f.Claim = c.Text
			out = append(out, f)
			continue
		}
		var fails []string
		var seqs []uint64
		ok := false
		for _, e := range pms {
			status, failed, known, exitSeq := a.exitStatus(e.ExecID)
			if !known || !failed {
				ok = true
				break
			}
			fails = append(fails, cmdline(e)+" "+status)
			seqs = append(seqs, e.Seq, exitSeq)
		}
		if !ok {
			detail := fmt.Sprintf("The agent said %q, but every package manager run before it failed: %s.", c.Text, list(fails, 5))
			f := a.finding(policy.RuleClaimInstallMismatch, ruleSeverity(policy.RuleClaimInstallMismatch),
				"Claimed to have installed "+excerpt(what, 60)+", but the install failed", detail, a.callOf(pms[len(pms)-1]), seqs, false)
			f.Claim = c.Text
			out = append(out, f)
		}
	}
	return append(out, a.offRegistry()...)
}

// offRegistry reports package manager runs whose process trees connected
// to hosts outside the configured registries.
func (a *analysis) offRegistry() []Finding {
	var out []Finding
	for _, pm := range a.topMatches(a.execNums, cmdPackageManager) {
		var hosts []string
		var seqs []uint64
		seen := map[string]bool{}
		for _, p := range a.procs.subtree(pm.ExecID) {
			for _, i := range p.events {
				if a.facts[i].flags&fEgress == 0 {
					continue
				}
				e := a.events[i]
				if e.Port == 53 || a.internalLoopback(e) {
					continue
				}
				pr := a.peerOf(e)
				if a.pol.IsRegistry(pr.host, e.Addr, e.Port) {
					continue
				}
				if d := pr.display(e); !seen[d] {
					seen[d] = true
					hosts = append(hosts, d)
				}
				seqs = append(seqs, e.Seq)
				if pr.dnsSeq != 0 {
					seqs = append(seqs, pr.dnsSeq)
				}
			}
		}
		if len(hosts) == 0 {
			continue
		}
		call, who := a.actor(pm)
		detail := fmt.Sprintf("%s (%s) reached %s, outside the configured registries: a dependency or install script fetching from elsewhere.",
			cmdline(pm), who, list(hosts, 5))
		out = append(out, a.finding(policy.RuleClaimInstallMismatch, ruleSeverity(policy.RuleClaimInstallMismatch),
			"Package manager reached hosts outside the registries: "+cmdline(pm), detail, call, capped(append([]uint64{pm.Seq}, seqs...), 30), true))
	}
	return out
}
