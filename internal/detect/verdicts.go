package detect

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/polygraph/polygraph/internal/integrity"
)

// maxVerdictEvidence bounds the exec seqs one integrity finding lists: a
// modified binary a build loop runs 2,000 times is one finding.
const maxVerdictEvidence = 20

// reBuildDir matches the per-run directories of build tools whose
// outputs differ in path every run (go test's /tmp/go-build123/b001/),
// so that their binaries count as one.
var reBuildDir = regexp.MustCompile(`/go-build[0-9]+/(b[0-9]+/)?`)

// verdictFindings raises the rule's finding for every file whose verdict
// integrity says is worth one (Verdict.Finding), once per path, at the
// first exec that ran it, with the exec seqs that ran it as evidence.
func verdictFindings(s *run, rule string) []Finding {
	if len(s.in.Verdicts) == 0 {
		return nil
	}
	byExec := make(map[string]*integrity.Result, len(s.in.Verdicts))
	for i := range s.in.Verdicts {
		byExec[s.in.Verdicts[i].ExecID] = &s.in.Verdicts[i]
	}
	var out []Finding
	seen := map[string]int{} // dedupe key -> index in out
	for _, i := range s.execs {
		e := s.events[i]
		r := byExec[e.ExecID]
		if r == nil {
			continue
		}
		// A copy of a program an ancestor already runs is judged where
		// it first ran (its script, if any, still is here).
		relaunch := rule == integrity.RuleUntrustedBinary && s.relaunch(e)
		for _, v := range r.Verdicts() {
			if relaunch && v.Role == integrity.RoleBinary {
				continue
			}
			f, ok := v.Finding()
			if !ok || f.Rule != rule {
				continue
			}
			key := reBuildDir.ReplaceAllString(v.Path, "/go-build*/")
			if at, ok := seen[key]; ok {
				if ev := out[at].Evidence; len(ev) < maxVerdictEvidence {
					out[at].Evidence = append(ev, e.Seq)
				}
				continue
			}
			call, who := s.actor(e)
			detail := fmt.Sprintf("%s ran it (`%s`): %s.", who, excerpt(strings.Join(e.Argv(), " "), 160), f.Detail)
			seen[key] = len(out)
			sev := Severity(f.Severity)
			out = append(out, s.finding(sev, f.Title, detail, call, []uint64{e.Seq}, sev.Rank() > s.rule.Severity.Rank()))
		}
	}
	return out
}
