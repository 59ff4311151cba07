package detect

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/transcript"
)

func init() {
	register(&Rule{
		ID:         "claim-edit-mismatch",
		Scope:      ScopeSession,
		Summary:    "the agent says it changed, created or deleted a file the kernel never saw touched; or files were written that nothing mentions",
		Severity:   SeverityMedium,
		Frameworks: Frameworks{OWASPLLM: []string{"LLM09"}, SAIF: []string{saifModelOutput}},
		// A downloaded file that ran is remote-code-exec's: that it went
		// unmentioned adds nothing.
		Needs: []string{"remote-code-exec"},
		check: claimEditMismatch,
	})
}

var claimVerb = map[transcript.ClaimKind]string{
	transcript.ClaimEdited: "changed", transcript.ClaimCreated: "created", transcript.ClaimDeleted: "deleted",
}

// claimEditMismatch is the claim-edit-mismatch rule.
func claimEditMismatch(s *run) []Finding {
	var out []Finding
	for _, c := range s.claimsOf(transcript.ClaimEdited, transcript.ClaimCreated, transcript.ClaimDeleted) {
		earlier := s.changedBefore(c)
		verb := claimVerb[c.Kind]
		paths := claimPaths(c.Subject)
		if len(paths) == 0 {
			// No path named: any change outside the noise before the claim
			// will do.
			found := false
			for _, ch := range earlier {
				if p := ch.of(c.Kind); p >= 0 && ch.ok && s.byEvent[ch.i].flags&fOwn == 0 && !s.is(setNoise, p) {
					found = true
					break
				}
			}
			if !found {
				detail := fmt.Sprintf("The agent said %q, but no file was %s before it (outside temporary and cache paths).", c.Text, verb)
				f := s.finding(s.rule.Severity,
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
			same := make([]int8, len(s.paths.strs)) // samePath(path id, p): 0 not asked yet, 1 yes, -1 no
			for _, ch := range earlier {
				got := ch.of(c.Kind)
				if got < 0 {
					continue
				}
				if same[got] == 0 {
					same[got] = -1
					if samePath(s.paths.strs[got], p, s.home) {
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
				e := s.events[ch.i]
				failures = append(failures, fmt.Sprintf("%s (error %d, s.home)", s.display(s.paths.strs[got]), -*e.Result))
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
		f := s.finding(s.rule.Severity,
			fmt.Sprintf("Claimed to have %s %s, but it was not", verb, list(missing, 2)), detail, firstCall(c), capped(seqs, 20), false)
		f.Claim = c.Text
		out = append(out, f)
	}
	return append(out, unmentionedWrites(s)...)
}

// unmentionedWrites reports, per tool call, files its processes left
// written that no tool call and no claim mentions.
func unmentionedWrites(s *run) []Finding {
	if s.attr == nil || s.in.Transcript == nil {
		return nil
	}
	type live struct {
		call string
		seq  uint64
	}
	files := map[string]live{}
	var order []string
	for i := range s.byEvent {
		f := &s.byEvent[i]
		if f.flags&fRemoved != 0 {
			delete(files, s.paths.strs[f.path])
		}
		if f.written < 0 {
			continue
		}
		e, w := s.events[i], s.paths.strs[f.written]
		at, _ := s.attribution(e)
		if at.ToolCallID == "" || (at.Reason != correlate.ReasonLineage && at.Reason != correlate.ReasonInProcess) {
			delete(files, w) // rewritten by someone else: theirs now
			continue
		}
		if _, ok := files[w]; !ok {
			order = append(order, w)
		}
		files[w] = live{at.ToolCallID, e.Seq}
	}
	ran := map[uint64]bool{} // the writes of downloaded files that then ran
	for _, f := range s.needs["remote-code-exec"] {
		for _, seq := range f.Evidence {
			ran[seq] = true
		}
	}
	byCall := map[string][]string{}
	seqs := map[string][]uint64{}
	var calls []string
	for _, p := range order {
		l, ok := files[p]
		if !ok || s.is(setNoise, s.pathID(p)) || mentioned(s, p) || ran[l.seq] {
			continue
		}
		if _, ok := byCall[l.call]; !ok {
			calls = append(calls, l.call)
		}
		byCall[l.call] = append(byCall[l.call], s.display(p))
		seqs[l.call] = append(seqs[l.call], l.seq)
		delete(files, p) // once
	}
	var out []Finding
	for _, c := range calls {
		detail := fmt.Sprintf("Tool call %s left %s written that no tool call or claim mentions: %s.",
			s.describeCall(c), plural(len(byCall[c]), "file", "files"), list(byCall[c], 8))
		out = append(out, s.finding(SeverityLow,
			"Files written that nothing mentions: "+list(byCall[c], 2), detail, c, capped(seqs[c], 20), false))
	}
	return out
}

// mentioned reports whether a tool call or a claim names path p.
func mentioned(s *run, p string) bool {
	base := path.Base(p)
	for _, c := range s.calls {
		for _, cp := range c.Paths {
			if samePath(p, cp, s.home) {
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
	if s.in.Transcript != nil {
		for _, cl := range s.in.Transcript.Claims {
			if cl != nil && (strings.Contains(cl.Subject, base) || strings.Contains(cl.Text, base)) {
				return true
			}
		}
	}
	return false
}

var (
	reVersionish = regexp.MustCompile(`^v?\d+(\.\d+)+$`)
	reOnlyDots   = regexp.MustCompile(`^[./]+$`)
)

// fileExts are extensions that make a word without a slash a file name
// rather than a dotted identifier (`config.Load`, `os.path`).
var fileExts = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range strings.Fields(`go mod sum py pyi ipynb js mjs cjs jsx ts tsx vue svelte json jsonc yaml yml toml
		ini cfg conf env txt md mdx rst adoc html htm css scss sass less xml svg csv tsv sql graphql proto
		rs rb erb java kt kts gradle scala clj c h cc cpp cxx hh hpp m mm cs fs vb php pl pm sh bash zsh fish ps1 bat
		swift dart ex exs erl hrl hs ml mli lua r jl nim zig tf tfvars hcl lock log ini properties gemspec
		gitignore dockerignore editorconfig npmrc nvmrc dockerfile makefile cmake mk nix patch diff`) {
		m[e] = true
	}
	return m
}()

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
func samePath(have, claimed, home string) bool {
	claimed = strings.TrimPrefix(claimed, "./")
	if strings.HasPrefix(claimed, "~/") {
		if h, ok := homeRel(have, home); ok {
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
