package detect

import (
	"fmt"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "mass-publish",
		Summary:  "repeated package publishes, many package artifacts built, or far more bytes sent to a registry than an install sends",
		Severity: SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1195.002"}, OWASPLLM: []string{"LLM03", "LLM06"},
			SAIF: []string{saifRogue}},
		check: massPublish,
	})
}

// The policy lists only this rule asks about.
var (
	cmdPublish  = newCommandSet((*policy.Policy).Publish)
	setArtifact = policySet((*policy.Policy).Artifact)
)

// massPublish is the mass-publish rule: one finding per session that puts
// together publish commands, package artifacts built, and bytes sent to
// registries.
func massPublish(s *run) []Finding {
	th := s.pol.Thresholds
	publishes := publishCommands(s)
	artifacts, artifactOrder := artifactsBuilt(s)
	sent, netSeqs := sentToRegistries(s)

	P, A := len(publishes), len(artifacts)
	sev, ok := publishSeverity(th, P, A, sent)
	if !ok {
		return nil
	}
	var parts []string
	var evidence []uint64
	calls := map[string]bool{}
	if P > 0 {
		var cmds []string
		for _, e := range publishes {
			cmds = append(cmds, "`"+excerpt(strings.Join(e.Argv, " "), 80)+"`")
			evidence = append(evidence, e.Seq)
			calls[s.callOf(e)] = true
		}
		parts = append(parts, fmt.Sprintf("%s ran (%s)", plural(P, "publish command", "publish commands"), list(cmds, 5)))
	}
	if A > 0 {
		var shown []string
		for _, p := range artifactOrder {
			shown = append(shown, s.display(p))
			evidence = append(evidence, artifacts[p])
		}
		parts = append(parts, fmt.Sprintf("%s built (%s)", plural(A, "package artifact was", "package artifacts were"), list(shown, 5)))
	}
	if sent > 0 {
		parts = append(parts, fmt.Sprintf("%s was sent to registry hosts (an install sends far less; threshold %s)", bytesize(sent), bytesize(th.RegistryBytesSent)))
		evidence = append(evidence, netSeqs...)
	}
	call := ""
	if len(calls) == 1 {
		for c := range calls {
			call = c
		}
	}
	title := "Package publishing"
	if sev.Rank() >= SeverityHigh.Rank() {
		title = "Mass package publishing"
	}
	detail := strings.Join(parts, "; ") + "."
	if P == 0 && sent > 0 {
		detail += " No publish command was seen: uploads may go straight to a registry API."
	}
	slices.Sort(evidence)
	return []Finding{s.finding(sev, title, detail, call, capped(evidence, 50), false)}
}

// publishCommands returns the publish commands run, but for those run by
// another publish.
func publishCommands(s *run) []*event.Event {
	var publishes []*event.Event
	publishImage := map[string]bool{}
	for n, i := range s.execs {
		if !s.runs(cmdPublish, int32(n)) {
			continue
		}
		e := s.events[i]
		publishImage[e.ExecID] = true
		if s.tree.HasAncestor(e.ExecID, func(p *lineage.Image) bool { return publishImage[p.ID] }) {
			continue // a child of a publish (npm publish → node …) is the same publish
		}
		publishes = append(publishes, e)
	}
	return publishes
}

// artifactsBuilt returns the package artifacts created, with the seq that
// first created each, in that order.
func artifactsBuilt(s *run) (map[string]uint64, []string) {
	artifacts := map[string]uint64{}
	var order []string
	for i := range s.byEvent {
		f := &s.byEvent[i]
		if f.written < 0 || f.flags&fCreated == 0 || !s.is(setArtifact, f.written) {
			continue
		}
		p := s.paths.strs[f.written]
		if _, ok := artifacts[p]; !ok {
			artifacts[p] = s.events[i].Seq
			order = append(order, p)
		}
	}
	return artifacts, order
}

// sentToRegistries adds up the bytes sent to registries and upload hosts,
// from the per-peer net counters; the host of a peer is the one its
// connect went by.
func sentToRegistries(s *run) (sent uint64, seqs []uint64) {
	connHost := map[string]peer{}
	for i := range s.byEvent {
		if s.byEvent[i].flags&fEgress != 0 {
			e := s.events[i]
			connHost[fmt.Sprintf("%d\x00%s\x00%d", e.PID, e.Addr, e.Port)] = s.peerOf(e)
		}
	}
	for i := range s.byEvent {
		if s.byEvent[i].flags&fNetSent == 0 {
			continue
		}
		e := s.events[i]
		p, ok := connHost[fmt.Sprintf("%d\x00%s\x00%d", e.PID, e.Addr, e.Port)]
		if !ok {
			p = s.peerOf(e)
		}
		if s.pol.IsPublishHost(p.host, e.Addr, e.Port) {
			sent += e.BytesSent
			seqs = append(seqs, e.Seq)
		}
	}
	return sent, seqs
}

// publishSeverity weighs publishes commands, artifacts built and bytes
// sent to registries against the thresholds; ok is false when together
// they are nothing to report.
func publishSeverity(th policy.Thresholds, publishes, artifacts int, sent uint64) (Severity, bool) {
	bytesHigh := th.RegistryBytesSent > 0 && sent > th.RegistryBytesSent
	manyArtifacts := th.Artifacts > 0 && artifacts >= th.Artifacts
	switch {
	case th.PublishCount > 0 && publishes >= th.PublishCount:
		return SeverityHigh, true
	case manyArtifacts && (publishes > 0 || bytesHigh):
		return SeverityHigh, true
	case bytesHigh && publishes > 0:
		return SeverityHigh, true
	case bytesHigh:
		return SeverityMedium, true
	case publishes > 0, manyArtifacts:
		return SeverityLow, true
	}
	return "", false
}

// bytesize formats a byte count for people.
func bytesize(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
