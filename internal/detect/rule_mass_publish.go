package detect

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "mass-publish",
		Scope:    ScopeSession,
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
// together publish commands, HTTP uploads of package artifacts, artifacts
// built, and bytes sent to registries.
func massPublish(s *run) []Finding {
	th := s.pol.Thresholds
	publishes := publishCommands(s)
	ups := httpUploads(s, publishes)
	artifacts, artifactOrder := artifactsBuilt(s)
	sent, netSeqs := sentToRegistries(s)

	P, U, A := len(publishes), len(ups), len(artifacts)
	sev, ok := publishSeverity(th, P+U, A, sent)
	if !ok {
		return nil
	}
	var parts []string
	var evidence []uint64
	calls := map[string]int{}
	if P > 0 {
		var cmds []string
		for _, e := range publishes {
			cmds = append(cmds, "`"+excerpt(strings.Join(e.Argv(), " "), 80)+"`")
			evidence = append(evidence, e.Seq)
			calls[s.callOf(e)]++
		}
		parts = append(parts, fmt.Sprintf("%s ran (%s)", plural(P, "publish command", "publish commands"), list(cmds, 5)))
	}
	if U > 0 {
		var shown []string
		var bytes uint64
		for _, u := range ups {
			shown = append(shown, s.display(u.artifact))
			evidence = append(evidence, u.seqs...)
			calls[s.callOf(u.exec)]++
			bytes += u.sent
		}
		parts = append(parts, fmt.Sprintf("%s sent %s out (%s)", plural(U, "process that read a package artifact", "processes that read package artifacts"),
			human.Bytes(bytes), list(shown, 5)))
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
		parts = append(parts, fmt.Sprintf("%s was sent to registry hosts (an install sends far less; threshold %s)", human.Bytes(sent), human.Bytes(th.RegistryBytesSent)))
		evidence = append(evidence, netSeqs...)
	}
	call, byCall := publishCalls(calls)
	title := "Package publishing"
	if sev.Rank() >= SeverityHigh.Rank() {
		title = "Mass package publishing"
	}
	detail := strings.Join(parts, "; ") + "."
	if byCall != "" {
		detail += " By tool call: " + byCall + "."
	}
	if P == 0 && U == 0 && sent > 0 {
		detail += " No publish command was seen: uploads may go straight to a registry API."
	}
	slices.Sort(evidence)
	return []Finding{s.finding(sev, title, detail, call, capped(evidence, 50), false)}
}

// publishCalls returns the tool call that made most of the publishes and
// uploads counted in calls ("" when none did: unattributed) and, when
// more than one call made them, how many each did.
func publishCalls(calls map[string]int) (call, byCall string) {
	ids := slices.Sorted(maps.Keys(calls))
	best := 0
	var each []string
	for _, id := range ids {
		n := calls[id]
		if id != "" && n > best {
			call, best = id, n
		}
		name := id
		if name == "" {
			name = "none"
		}
		each = append(each, fmt.Sprintf("%s (%d)", name, n))
	}
	if len(ids) > 1 {
		byCall = list(each, 8)
	}
	return call, byCall
}

// upload is a process that read a package artifact and then sent bytes
// out: an HTTP upload straight to a registry API.
type upload struct {
	exec     *event.Event // the exec of its program
	artifact string
	sent     uint64
	seqs     []uint64 // the artifact's open and the net counters
}

// httpClients upload what their command line names: `curl -T x.gem`,
// `--data-binary @x.gem`, `-F file=@x.gem`.
var httpClients = []string{"curl", "wget", "http", "https", "xh", "aria2c"}

// httpUploads returns the processes that read a package artifact (the
// artifacts list, and Java archives) and sent at least uploadMinBytes to
// a peer outside the tree: HTTP clients, and other programs whose command
// line names the artifact — but build tools, package managers and the
// publishes (which count as publish commands), and `java -jar x.jar`.
func httpUploads(s *run, publishes []*event.Event) []upload {
	const uploadMinBytes = 512
	pub := map[string]bool{}
	for _, e := range publishes {
		pub[e.ExecID] = true
	}
	var out []upload
	for _, im := range s.tree.Images() {
		// The agent reading an artifact with its own tool sends it to the
		// model, which the transcript shows.
		if im.Exec == nil || len(im.Exec.Argv()) == 0 || pub[im.ID] || s.agent[im.ID] ||
			s.tree.HasAncestor(im.ID, func(p *lineage.Image) bool { return pub[p.ID] }) {
			continue
		}
		// A build tool is what the kernel ran (programNames), never what
		// the process calls itself; an HTTP client may be either.
		if s.pol.BuildTool(s.programNames(im.ID)) || s.runsPackageManager(im) {
			continue
		}
		client := slices.ContainsFunc(s.names(im.ID), func(n string) bool { return slices.Contains(httpClients, n) })
		u := upload{exec: im.Exec}
		for _, j := range im.Events {
			e, f := s.events[j], &s.byEvent[j]
			switch {
			case f.flags&fRead != 0 && u.artifact == "" && uploadArtifact(s, f.path) &&
				(client || namesArtifact(im.Exec.Argv(), e.Path)):
				u.artifact = e.Path
				u.seqs = append(u.seqs, e.Seq)
			case f.flags&fNetSent != 0 && offTree(s.facts, e) && !s.agentOwn(e):
				u.sent += e.BytesSent()
				u.seqs = append(u.seqs, e.Seq)
			}
		}
		if u.artifact != "" && u.sent >= uploadMinBytes {
			out = append(out, u)
		}
	}
	return out
}

// uploadArtifact reports whether the path with id is a package artifact
// an upload sends: the artifacts list, or a Java archive.
func uploadArtifact(s *run, id int32) bool {
	return s.is(setArtifact, id) || id >= 0 && strings.HasSuffix(s.paths.strs[id], ".jar") && !s.is(setNoise, id)
}

// namesArtifact reports whether argv names the file p (by its base name)
// other than as the program a `-jar` or `-cp` runs.
func namesArtifact(argv []string, p string) bool {
	base := path.Base(p)
	for i, a := range argv[1:] {
		if !strings.Contains(a, base) {
			continue
		}
		if prev := argv[i]; prev == "-jar" || prev == "-cp" || prev == "-classpath" {
			return false
		}
		return true
	}
	return false
}

// runsPackageManager reports whether image im or an ancestor runs an
// install (npm install ./x.tgz reads the artifact and talks to the
// registry).
func (s *facts) runsPackageManager(im *lineage.Image) bool {
	is := func(p *lineage.Image) bool {
		if p.Exec == nil {
			return false
		}
		_, ok := s.pol.PackageManager(p.Exec.Argv())
		return ok
	}
	return is(im) || s.tree.HasAncestor(im.ID, is)
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
			connHost[fmt.Sprintf("%d\x00%s\x00%d", e.PID, e.Addr(), e.Port())] = s.peerOf(e)
		}
	}
	for i := range s.byEvent {
		if s.byEvent[i].flags&fNetSent == 0 {
			continue
		}
		e := s.events[i]
		p, ok := connHost[fmt.Sprintf("%d\x00%s\x00%d", e.PID, e.Addr(), e.Port())]
		if !ok {
			p = s.peerOf(e)
		}
		if s.pol.IsPublishHost(p.host, e.Addr(), e.Port()) {
			sent += e.BytesSent()
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
