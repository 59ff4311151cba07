package detect

import (
	"fmt"

	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

func init() {
	register(&Rule{
		ID:         "claim-install-mismatch",
		Scope:      ScopeSession,
		Summary:    "the agent says it installed something but no package manager ran (or it failed); or a package manager reached hosts outside the configured registries",
		Severity:   SeverityMedium,
		Frameworks: Frameworks{OWASPLLM: []string{"LLM09"}, SAIF: []string{saifModelOutput}},
		Escalated: Frameworks{ATTACK: []string{"T1195.001"}, OWASPLLM: []string{"LLM03"},
			SAIF: []string{saifComponent}},
		Escalation: "a package manager connected to a host outside `registries`",
		check:      claimInstallMismatch,
	})
}

// The policy list only this rule asks about.
var cmdPackageManager = newCommandSet((*policy.Policy).PackageManager)

// claimInstallMismatch is the claim-install-mismatch rule.
func claimInstallMismatch(s *run) []Finding {
	var out []Finding
	for _, c := range s.claimsOf(transcript.ClaimInstalled) {
		linked, earlier := s.scope(c)
		pms := s.topMatches(linked, cmdPackageManager)
		if len(pms) == 0 {
			pms = s.topMatches(earlier, cmdPackageManager)
		}
		what := c.Subject
		if what == "" {
			what = "packages"
		}
		if len(pms) == 0 {
			detail := fmt.Sprintf("The agent said %q, but no package manager ran before it.", c.Text)
			if ran := s.execsOf(linked); len(ran) > 0 {
				detail += " The tool calls it refers to ran " + list(ran, 5) + "."
			}
			f := s.finding(s.rule.Severity,
				"Claimed to have installed "+excerpt(what, 60)+", but no package manager ran", detail, firstCall(c), nil, false)
			f.Claim = c.Text
			out = append(out, f)
			continue
		}
		var fails []string
		var seqs []uint64
		ok := false
		for _, e := range pms {
			status, failed, known, exitSeq := s.exitStatus(e.ExecID)
			if !known || !failed {
				ok = true
				break
			}
			fails = append(fails, cmdline(e)+" "+status)
			seqs = append(seqs, e.Seq, exitSeq)
		}
		if !ok {
			detail := fmt.Sprintf("The agent said %q, but every package manager run before it failed: %s.", c.Text, list(fails, 5))
			f := s.finding(s.rule.Severity,
				"Claimed to have installed "+excerpt(what, 60)+", but the install failed", detail, s.callOf(pms[len(pms)-1]), seqs, false)
			f.Claim = c.Text
			out = append(out, f)
		}
	}
	return append(out, offRegistry(s)...)
}

// offRegistry reports package manager runs whose process trees connected
// to hosts outside the configured registries.
func offRegistry(s *run) []Finding {
	var out []Finding
	for _, pm := range s.topMatches(s.execNums, cmdPackageManager) {
		var hosts []string
		var seqs []uint64
		seen := map[string]bool{}
		for _, p := range s.tree.Subtree(pm.ExecID) {
			for _, i := range p.Events {
				if s.byEvent[i].flags&fEgress == 0 {
					continue
				}
				e := s.events[i]
				if e.Port() == 53 || s.internalLoopback(e) {
					continue
				}
				pr := s.peerOf(e)
				if s.pol.IsRegistry(pr.host, e.Addr(), e.Port()) {
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
		call, who := s.actor(pm)
		detail := fmt.Sprintf("%s (%s) reached %s, outside the configured registries: a dependency or install script fetching from elsewhere.",
			cmdline(pm), who, list(hosts, 5))
		out = append(out, s.finding(s.rule.Severity,
			"Package manager reached hosts outside the registries: "+cmdline(pm), detail, call, capped(append([]uint64{pm.Seq}, seqs...), 30), true))
	}
	return out
}
