package transcript

import (
	"path"
	"regexp"
	"strings"
	"unicode"
)

// ClaimKind names what a claim asserts.
type ClaimKind string

// Claim kinds. Each is something the kernel record can confirm or refute.
const (
	ClaimTestsRan    ClaimKind = "tests-ran"    // "I ran the tests", "Ran `pytest`"
	ClaimTestsPassed ClaimKind = "tests-passed" // "All 42 tests pass", "42 passed"
	ClaimBuildPassed ClaimKind = "build-passed" // "The build succeeded", "compiles cleanly"
	ClaimInstalled   ClaimKind = "installed"    // "Installed requests"
	ClaimEdited      ClaimKind = "edited"       // "I've updated src/app.py"
	ClaimCreated     ClaimKind = "created"      // "Created `lib/x.ex`", "The project has been created"
	ClaimDeleted     ClaimKind = "deleted"      // "I've deleted hello.js"
	ClaimRan         ClaimKind = "ran"          // "I ran `bd ready`"
	ClaimNoNetwork   ClaimKind = "no-network"   // "without any network access"
)

// The claim rules. A claim is a past-tense statement of fact in the
// assistant's own voice: first person ("I ran", "we've updated"), a bare
// past participle opening a sentence or a bullet ("Installed requests",
// "Created `x.go`"), or a passive with has/have/was/were ("the project has
// been created"). Sentences that announce, plan, hedge, ask or negate ("I'll
// run the tests", "Let me create", "should pass", "did not pass", "?") make
// no claim. Code blocks, block quotes and tables are skipped: they quote or
// plan rather than report. docs/transcript-jsonl.md lists the rules with
// examples; claims_test.go holds the real sentences they were tuned on.
// Reported speech ("the subagent reports all tests pass", "according to
// the test agent") is another agent's claim, quoted text ("…") and
// command lines ("$ pytest") are nobody's, and a test count inside
// backticks is a command or its output quoted.
var (
	reIntent = regexp.MustCompile(`(?i)\b(i'll|i will|i'm going to|i am going to|let me|let's|we'll|we will|going to|need to|needs to|should|would|might|may|plan to|want to|try to|trying to|about to|if you|you can|you should|you'll|can you|could you|please)\b`)
	reNegate = regexp.MustCompile(`(?i)\b(not|never|no longer|unable to|failed to|cannot|can't|couldn't|didn't|haven't|hasn't|wasn't|weren't|won't|doesn't|don't|isn't|aren't)\b`)
	reFail   = regexp.MustCompile(`(?i)\b(fail|fails|failed|failing|failure|failures|errors?|broken|red)\b`)
	reNoFail = regexp.MustCompile(`(?i)\b(0|zero|no|without(?: any)?)\s+(fail\w*|errors?|regressions?)\b`)

	// Who did it: "I", "we", "I've", "I have also", or nobody (a bullet, a
	// sentence starting with the verb).
	actor = `(?:^|\b(?:i|we)(?:'ve|\s+have)?(?:\s+(?:also|now|just|successfully|then|already|finally|first|quickly))*\s+|^(?:also|then|and|successfully|finally|first)\s+)`
	// "has been", "were", "have now been successfully".
	passive = `\b(?:has|have|was|were)(?:\s+(?:now|also|all|just))?(?:\s+been)?(?:\s+(?:successfully|correctly|properly))?\s+`

	reTestsPassed = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(?:(\d+)\s+)?(?:(?:unit|integration|e2e|end-to-end|new|existing|remaining|relevant|the|my|our|all)\s+)*(?:tests?|specs?|test[- ]suites?|test[- ]cases?)\b[^.;:]{0,40}?\b(?:pass|passes|passed|passing|succeed|succeeds|succeeded|green)\b`),
		regexp.MustCompile(`(?i)\b(\d+)\s+(?:tests?\s+)?(?:passed|passing)\b`),
		regexp.MustCompile(`(?i)\ball\s+(?:green|passing)\b`),
		regexp.MustCompile(`(?i)\b(?:verification|validation|all checks)\s+(?:passed|succeeded|is green)\b`),
	}
	reTestWord    = regexp.MustCompile(`(?i)\b(tests?|specs?|suite|pytest|jest|vitest)\b`)
	reTestsRan    = regexp.MustCompile(`(?i)(?:` + actor + `(?:ran|re-?ran|executed|re-?executed|have run|'ve run)\b[^.;]{0,40}?\b(?:tests?|test suite|specs?|pytest|go test|npm test|jest|vitest|cargo test|mix test|rspec)\b|\b(?:tests?|specs?|test suite)\s+(?:ran|` + passive + `(?:run|executed)))`)
	reBuilt       = regexp.MustCompile(`(?i)\b(?:build|builds|compilation|compile|compiles|typecheck|type[- ]check|type[- ]checking|lint|linting|tsc|go vet)\b[^.;]{0,30}?\b(?:succeeded|succeeds|successful|passed|passes|passing|clean|cleanly|without (?:any )?errors|with no errors)\b|\b(?:compiled|built)\s+(?:successfully|cleanly|without errors)\b`)
	reInstalled   = regexp.MustCompile(`(?i)` + actor + `(?:re)?installed\s+(.+)`)
	reInstalledP  = regexp.MustCompile(`(?i)([\w@./\x60-]+)\s*` + passive + `(?:re)?installed\b`)
	reEditVerb    = `(?:updated|modified|edited|changed|rewrote|rewritten|refactored|patched|adjusted|amended|revised|fixed|fixed up|implemented)`
	reEdited      = regexp.MustCompile(`(?i)(?:` + actor + reEditVerb + `|` + passive + reEditVerb + `)\b`)
	reCreateVerb  = `(?:created|wrote|written|generated|scaffolded|added)`
	reCreated     = regexp.MustCompile(`(?i)(?:` + actor + reCreateVerb + `|` + passive + reCreateVerb + `)\b`)
	reDeleteVerb  = `(?:deleted|removed|erased|cleaned up)`
	reDeleted     = regexp.MustCompile(`(?i)(?:` + actor + reDeleteVerb + `|` + passive + reDeleteVerb + `)\b`)
	reRan         = regexp.MustCompile(`(?i)` + actor + `(?:ran|re-?ran|executed|invoked)\b`)
	reNoNet       = regexp.MustCompile(`(?i)\b(?:no|without(?: any)?|didn't make any|did not make any|never made any)\s+(?:network|internet|outbound|external)(?:\s+(?:access|calls?|requests?|connections?|traffic))?\b|\b(?:did not|didn't|never)\s+(?:access|touch|use|contact)\s+the\s+(?:network|internet)\b`)
	reFileWord    = regexp.MustCompile(`(?i)\b(files?|director(?:y|ies)|folders?)\b`)
	reRemovedFrom = regexp.MustCompile(`(?i)\b(?:deleted|removed|erased)\b.*\bfrom\s+(?:the\s+)?\x60?[\w./-]+\.\w+`)
	reAddedTo     = regexp.MustCompile(`(?i)\badded\b.*\b(?:to|in|into)\s+\x60?[\w./-]+\.\w+`)
	reBacktick    = regexp.MustCompile("`([^`]+)`")
	rePathLike    = regexp.MustCompile(`(?:^|[\s(\x60"'])((?:~|\.{1,2})?/?(?:[\w@.+-]+/)*[\w@+-][\w@.+-]*\.[A-Za-z][\w]{0,9}|(?:~|\.{1,2})?/?(?:[\w@.+-]+/)+[\w@.+-]*)`)
	reMakeSure    = regexp.MustCompile(`(?i)\b(make sure|makes sure|making sure|make|makes|making|ensure|ensures|ensuring|get|getting|so that|until|verify|verifying|check|checking|whether|if|confirm|confirming|to)\s+(?:that\s+)?(?:all\s+)?(?:the\s+)?(?:\d+\s+)?$`)
	reNumber      = regexp.MustCompile(`\b\d+\b`)
	// reReported marks reported speech: a subagent's (or a tool's) report
	// the parent repeats is that agent's claim, not the parent's.
	reReported = regexp.MustCompile(`(?i)\b(?:sub-?agents?|according to|(?:the|its|their|my)\s+(?:[\w-]+\s+)?agent|(?:it|they|he|she)\s+(?:reports?|reported|says|said|claims?|claimed|confirms?|confirmed))\b`)
	// reQuoted is text in double quotes: quoted, not said.
	reQuoted  = regexp.MustCompile(`"[^"]*"|“[^”]*”`)
	rePkgStop = regexp.MustCompile(`(?i)\s+(?:for|to|via|with|using|in|into|from|so|because|which|as|and then|—|-\s)\b.*$`)
)

// ExtractClaims finds the checkable claims in one piece of assistant text.
// At, ToolCallIDs and the ids are left for the caller.
func ExtractClaims(text string) []*Claim {
	var out []*Claim
	for _, s := range sentences(text) {
		out = append(out, claimsIn(s)...)
	}
	return out
}

// Cheap gates: a rule's regular expression runs only on sentences holding
// one of its words, which keeps claim extraction fast on long transcripts.
var (
	gateTests   = []string{"pass", "succeed", "green"}
	gateRan     = []string{"ran", "run", "execut", "invok"}
	gateBuilt   = []string{"build", "built", "compil", "lint", "tsc", "type", "vet"}
	gateInstall = []string{"install"}
	gateEdit    = []string{"updat", "modif", "edit", "chang", "rewr", "refactor", "patch", "adjust", "amend", "revis", "fix", "implement"}
	gateCreate  = []string{"creat", "wrote", "written", "generat", "scaffold", "added"}
	gateDelete  = []string{"delet", "remov", "eras", "clean"}
	gateNet     = []string{"network", "internet", "outbound", "external"}
)

func hasAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func claimsIn(s string) []*Claim {
	if len(s) < 6 || len(s) > 600 || strings.HasSuffix(s, "?") {
		return nil
	}
	low := strings.ToLower(s)
	tests, ran, built, install := hasAny(low, gateTests), hasAny(low, gateRan), hasAny(low, gateBuilt), hasAny(low, gateInstall)
	edit, create, del, net := hasAny(low, gateEdit), hasAny(low, gateCreate), hasAny(low, gateDelete), hasAny(low, gateNet)
	if !(tests || ran || built || install || edit || create || del || net) || reIntent.MatchString(s) || reReported.MatchString(s) {
		return nil
	}
	// Quoted text is someone else's words; so is a test count in
	// backticks, a command or its output quoted (`echo 5 passed`).
	plain := reQuoted.ReplaceAllString(s, `""`)
	said := reBacktick.ReplaceAllString(plain, "``")
	negated := reNegate.MatchString(s)
	var out []*Claim
	add := func(k ClaimKind, subject string) {
		out = append(out, &Claim{Kind: k, Text: s, Subject: subject, ToolCallIDs: []string{}})
	}
	if tests && !negated && !failed(s) {
		if count, ok := testsPassed(plain, said); ok {
			add(ClaimTestsPassed, count)
		}
	}
	if negated {
		return out
	}
	testsRan := ran && reTestsRan.MatchString(plain)
	if testsRan {
		add(ClaimTestsRan, firstBacktick(s))
	}
	if built && reBuilt.MatchString(s) && !failed(s) {
		add(ClaimBuildPassed, firstBacktick(s))
	}
	if install {
		if m := reInstalled.FindStringSubmatch(s); m != nil {
			if pkgs := packages(m[1]); pkgs != "" {
				add(ClaimInstalled, pkgs)
			}
		} else if m := reInstalledP.FindStringSubmatch(s); m != nil {
			add(ClaimInstalled, packages(m[1]))
		}
	}
	if !(edit || create || del || ran || net) {
		return dedupeClaims(out)
	}
	fileClaims(s, del, create, edit, add)
	if ran && reRan.MatchString(s) && (!testsRan || firstBacktick(s) != "") {
		add(ClaimRan, firstNonEmpty(firstBacktick(s), ranObject(s)))
	}
	if net && reNoNet.MatchString(s) {
		add(ClaimNoNetwork, "")
	}
	return dedupeClaims(out)
}

// failed says whether s reports a failure (and does not deny one).
func failed(s string) bool { return reFail.MatchString(s) && !reNoFail.MatchString(s) }

// fileClaims adds the claims about files s makes: deleted, created,
// edited (taking code out of a file or adding to one is an edit).
func fileClaims(s string, del, create, edit bool, add func(ClaimKind, string)) {
	paths := pathsIn(s)
	fileish := len(paths) > 0 || reFileWord.MatchString(s)
	switch {
	case !del:
	case reDeleted.MatchString(s) && fileish && !reRemovedFrom.MatchString(s):
		add(ClaimDeleted, strings.Join(paths, " "))
	case reDeleted.MatchString(s):
		add(ClaimEdited, firstNonEmpty(strings.Join(paths, " "), firstBacktick(s))) // code taken out of a file
	}
	if create && reCreated.MatchString(s) {
		if loc := reCreated.FindStringIndex(s); strings.Contains(strings.ToLower(s[loc[0]:loc[1]]), "added") && (!fileish || reAddedTo.MatchString(s)) {
			add(ClaimEdited, firstNonEmpty(strings.Join(paths, " "), firstBacktick(s))) // added something to a file
		} else {
			add(ClaimCreated, strings.Join(paths, " "))
		}
	}
	if edit && reEdited.MatchString(s) {
		add(ClaimEdited, firstNonEmpty(strings.Join(paths, " "), firstBacktick(s)))
	}
}

// testsPassed finds a tests-passed claim in a sentence, given with its
// quotes blanked (plain) and its backticks blanked too (said): a count in
// backticks is quoted output, but "`npm test` passes" is a claim. count
// is the number of tests it names, "" for none.
func testsPassed(plain, said string) (count string, ok bool) {
	for _, re := range reTestsPassed {
		in := plain
		if re == reTestsPassed[1] {
			in = said
		}
		loc := re.FindStringSubmatchIndex(in)
		if loc == nil || reMakeSure.MatchString(in[:loc[0]]) {
			continue
		}
		if re == reTestsPassed[2] && !reTestWord.MatchString(in) {
			continue
		}
		if len(loc) > 3 && loc[2] >= 0 {
			return in[loc[2]:loc[3]], true
		}
		return reNumber.FindString(in[loc[0]:loc[1]]), true
	}
	return "", false
}

func dedupeClaims(in []*Claim) []*Claim {
	seen := map[ClaimKind]bool{}
	out := in[:0]
	for _, c := range in {
		if !seen[c.Kind] {
			seen[c.Kind] = true
			out = append(out, c)
		}
	}
	return out
}

// sentences splits assistant text into cleaned sentences, leaving out code
// blocks, block quotes and tables.
func sentences(text string) []string {
	var out []string
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inCode = !inCode
			continue
		}
		if inCode || strings.HasPrefix(t, ">") || strings.HasPrefix(t, "|") || strings.HasPrefix(t, "<") || strings.HasPrefix(t, "$ ") {
			continue
		}
		t = cleanLine(t)
		for _, s := range splitSentences(t) {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

var reBullet = regexp.MustCompile(`^(?:#{1,6}\s+|[-*+•]\s+|\d+[.)]\s+|\[[ xX]\]\s+)+`)

// cleanLine drops markdown decoration: headings, bullets, emphasis and the
// check-mark emoji agents put before what they did.
func cleanLine(t string) string {
	t = reBullet.ReplaceAllString(t, "")
	t = strings.NewReplacer("**", "", "__", "").Replace(t)
	t = strings.TrimLeftFunc(t, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '`' && r != '~' && r != '/' && r != '.' && r != '('
	})
	return reBullet.ReplaceAllString(t, "")
}

// splitSentences splits at . ! or ? followed by a space, and at a colon
// ending a lead-in ("Done! I've created three files:").
func splitSentences(t string) []string {
	var out []string
	start := 0
	inTick := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c == '`' {
			inTick = !inTick
		}
		if inTick {
			continue
		}
		if (c == '.' || c == '!' || c == '?' || c == ';') && (i+1 == len(t) || t[i+1] == ' ') {
			end := i + 1
			if c == '.' || c == ';' {
				end = i // keep '?' and '!' (a question is dropped later)
			}
			out = append(out, t[start:end])
			start = i + 1
		}
	}
	return append(out, t[start:])
}

func firstBacktick(s string) string {
	if m := reBacktick.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// pathsIn finds what look like file paths in a sentence: words with a slash
// or a file extension, backticked or not.
func pathsIn(s string) []string {
	var out []string
	for _, m := range rePathLike.FindAllStringSubmatch(s, -1) {
		p := strings.TrimRight(m[1], ".,:;)")
		if p == "" || strings.Contains(p, "://") || isVersionish(p) || !strings.ContainsAny(p, "/.") || reProductJS.MatchString(p) && !strings.Contains(s, "`"+p+"`") {
			continue
		}
		out = appendUnique(out, p)
	}
	return out
}

// reProductJS matches product names that look like files: Next.js, Node.js.
var reProductJS = regexp.MustCompile(`^[A-Z][A-Za-z]*\.js$`)

var reVersion = regexp.MustCompile(`^v?\d+(\.\d+)+$|^(e\.g|i\.e|etc|vs)\.?$`)

func isVersionish(p string) bool { return reVersion.MatchString(strings.ToLower(p)) }

// packages reads package names after "installed": backticked names, or
// words up to the first preposition.
func packages(rest string) string {
	if ticks := reBacktick.FindAllStringSubmatch(rest, -1); len(ticks) > 0 {
		var names []string
		for _, t := range ticks {
			names = append(names, t[1])
		}
		return strings.Join(names, ", ")
	}
	rest = rePkgStop.ReplaceAllString(rest, "")
	var names []string
	for _, w := range strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		w = strings.Trim(w, ".:!()\"'")
		switch strings.ToLower(w) {
		case "", "and", "the", "a", "an", "all", "it", "them", "its", "their", "dependencies", "dependency", "packages", "package", "deps", "libraries", "library", "successfully", "both", "required", "necessary", "needed", "new", "latest", "version":
			continue
		}
		names = append(names, w)
		if len(names) == 5 {
			break
		}
	}
	return strings.Join(names, ", ")
}

// ranObject is what follows "ran" when nothing is backticked.
func ranObject(s string) string {
	loc := reRan.FindStringIndex(s)
	rest := strings.TrimSpace(s[loc[1]:])
	return excerpt(rest, 80)
}

// What shell commands do, for linking claims to calls.
var (
	reTestCmd    = regexp.MustCompile(`(?i)(?:^|[\s;&|(/])(?:pytest|py\.test|go\s+test|cargo\s+(?:test|nextest)|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test|deno\s+test|npx\s+(?:jest|vitest|mocha|playwright\s+test)|jest|vitest|mocha|mix\s+test|rspec|rake\s+test|phpunit|tox|nox|make\s+(?:test|check)|ctest|gradlew?\s+test|mvnw?\s+test|dotnet\s+test|python\d?(?:\.\d+)?\s+-m\s+(?:pytest|unittest)|swift\s+test|bats)\b`)
	reInstallCmd = regexp.MustCompile(`(?i)\b(?:pip\d?(?:\.\d+)?\s+install|-m\s+pip\s+install|uv\s+(?:pip\s+install|add|sync)|poetry\s+(?:add|install)|pipx\s+install|conda\s+install|npm\s+(?:install|i|add|ci)|pnpm\s+(?:add|install|i)|yarn\s+(?:add|install)|bun\s+(?:add|install)|cargo\s+(?:add|install)|go\s+(?:get|install)|gem\s+install|bundle\s+(?:add|install)|apt(?:-get)?\s+install|brew\s+install|apk\s+add|dnf\s+install|yum\s+install|mix\s+(?:deps\.get|igniter\.install)|composer\s+(?:require|install)|dotnet\s+add\s+package|create-next-app)\b`)
	reBuildCmd   = regexp.MustCompile(`(?i)(?:^|[\s;&|(/])(?:go\s+(?:build|vet)|cargo\s+(?:build|check|clippy)|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:build|lint|typecheck|type-check)|tsc|make|mix\s+(?:compile|credo)|gradlew?\s+build|mvnw?\s+(?:package|compile)|dotnet\s+build|eslint|ruff|mypy|next\s+build)\b`)
	reDeleteCmd  = regexp.MustCompile(`(?:^|[\s;&|(])(?:rm|rmdir|unlink|git\s+rm|trash)\s`)
	reCreateCmd  = regexp.MustCompile(`(?:^|[\s;&|(])(?:mkdir|touch|cp|mv|tee|cat\s*>|echo\s.*>|printf\s.*>|(?:npx|npm|pnpm|yarn|bun)\s+(?:create|init)\b|create-[\w-]+|cargo\s+(?:new|init)|go\s+mod\s+init|rails\s+new|django-admin\s+startproject|uv\s+init|poetry\s+new|git\s+init)|>\s*[\w./~-]`)
)

// linkClaim picks the calls of the current turn that a claim refers to.
// Claims in a subagent's text look only at that subagent's calls.
func linkClaim(c *Claim, turn []*ToolCall, parentID string) []string {
	ids := []string{}
	var calls []*ToolCall
	for _, tc := range turn {
		if parentID == "" || tc.ParentID == parentID {
			calls = append(calls, tc)
		}
	}
	pick := func(ok func(*ToolCall) bool) {
		for _, tc := range calls {
			if ok(tc) {
				ids = appendUnique(ids, tc.ID)
			}
		}
	}
	shell := func(re *regexp.Regexp) func(*ToolCall) bool {
		return func(tc *ToolCall) bool { return tc.Kind == KindShell && re.MatchString(tc.Command) }
	}
	switch c.Kind {
	case ClaimTestsRan, ClaimTestsPassed:
		pick(shell(reTestCmd))
	case ClaimBuildPassed:
		pick(shell(reBuildCmd))
	case ClaimInstalled:
		pick(installs(strings.Split(strings.ToLower(c.Subject), ", ")))
		if len(ids) == 0 {
			pick(shell(reInstallCmd))
		}
	case ClaimEdited, ClaimCreated, ClaimDeleted:
		if claimed := claimedPaths(c.Subject); len(claimed) > 0 {
			pick(touches(claimed))
			break
		}
		switch c.Kind {
		case ClaimEdited:
			pick(func(tc *ToolCall) bool { return tc.Kind == KindEdit || tc.Kind == KindWrite })
		case ClaimCreated:
			pick(func(tc *ToolCall) bool {
				return tc.Kind == KindWrite || tc.Kind == KindShell && reCreateCmd.MatchString(tc.Command)
			})
		case ClaimDeleted:
			pick(shell(reDeleteCmd))
		}
	case ClaimRan:
		want := strings.Join(strings.Fields(c.Subject), " ")
		if want == "" {
			break
		}
		pick(func(tc *ToolCall) bool {
			return tc.Kind == KindShell && strings.Contains(strings.Join(strings.Fields(tc.Command), " "), want)
		})
	}
	return ids
}

// installs matches an install command that names one of the packages.
func installs(names []string) func(*ToolCall) bool {
	return func(tc *ToolCall) bool {
		if tc.Kind != KindShell || !reInstallCmd.MatchString(tc.Command) {
			return false
		}
		cmd := strings.ToLower(tc.Command)
		for _, n := range names {
			if n != "" && strings.Contains(cmd, n) {
				return true
			}
		}
		return false
	}
}

// claimedPaths are the paths a file claim's subject names; a subject of
// one word with no path in it is taken as a file name.
func claimedPaths(subject string) []string {
	claimed := pathsIn(subject)
	if len(claimed) == 0 && subject != "" && !strings.Contains(subject, " ") {
		claimed = []string{subject}
	}
	return claimed
}

// touches matches a call that writes or edits one of the paths, or a shell
// call that names one.
func touches(claimed []string) func(*ToolCall) bool {
	return func(tc *ToolCall) bool {
		for _, p := range claimed {
			if tc.Kind == KindShell && mentions(tc, p) {
				return true
			}
			if tc.Kind == KindWrite || tc.Kind == KindEdit {
				for _, have := range tc.Paths {
					if samePath(have, p) {
						return true
					}
				}
			}
		}
		return false
	}
}

// samePath says whether a call's path is the one a claim names: equal, or
// one a suffix of the other at a path boundary ("src/app.py" and
// "/w/src/app.py"), or the same base name when the claim gives only a name.
func samePath(have, claimed string) bool {
	have, claimed = path.Clean(have), path.Clean(strings.TrimPrefix(claimed, "./"))
	switch {
	case have == claimed:
		return true
	case strings.HasSuffix(have, "/"+claimed), strings.HasSuffix(claimed, "/"+have):
		return true
	}
	if strings.HasPrefix(have, claimed+"/") {
		return true // a file inside a directory the claim names
	}
	return !strings.Contains(claimed, "/") && path.Base(have) == claimed
}

// mentions says whether a shell call's command names path p, as written or
// relative to the call's working directory.
func mentions(tc *ToolCall, p string) bool {
	if strings.Contains(tc.Command, p) {
		return true
	}
	p = path.Clean(p)
	if tc.Cwd != "" && strings.HasPrefix(p, tc.Cwd+"/") {
		rel := strings.TrimPrefix(p, tc.Cwd+"/")
		return len(rel) > 2 && strings.Contains(tc.Command, rel)
	}
	return false
}
