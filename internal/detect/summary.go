package detect

import (
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
)

// treeSummary is what a group of process images did.
type treeSummary struct {
	execs    []string // command lines
	writes   []string // paths written outside noise
	reads    int      // distinct paths read outside system noise
	hosts    []string // unexpected destinations
	children int
	secret   bool // read a credential or agent config path
	egress   bool // reached a destination outside the allowlist
	// outside: some of writes are outside the workspace.
	outside bool
	seqs    []uint64
}

// systemRead reports reads every process makes: libraries, locale data,
// the dynamic loader's files, /proc and /sys.
func systemRead(p string) bool {
	for _, pre := range []string{"/usr/", "/lib", "/etc/", "/proc/", "/sys/", "/dev/", "/opt/", "/nix/store/", "/snap/"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// summarize describes what the events of the images did. Only the events
// for which keep returns true count (nil: all).
func (s *facts) summarize(imgs []*lineage.Image, keep func(*event.Event) bool) treeSummary {
	var sum treeSummary
	seenW, seenR, seenH := map[int32]bool{}, map[int32]bool{}, map[string]bool{}
	for i, p := range imgs {
		if i > 0 && p.Exec != nil {
			sum.children++
		}
		for _, j := range p.Events {
			e, f := s.events[j], &s.byEvent[j]
			if keep != nil && !keep(e) {
				continue
			}
			switch {
			case f.flags&fExec != 0:
				sum.execs = append(sum.execs, "`"+excerpt(strings.Join(e.Argv, " "), 100)+"`")
				sum.seqs = append(sum.seqs, e.Seq)
			case f.flags&fEgress != 0:
				pr := s.peerOf(e)
				if s.allowed(e, pr) {
					continue
				}
				sum.egress = true
				if d := pr.display(e); !seenH[d] {
					seenH[d] = true
					sum.hosts = append(sum.hosts, d)
				}
				sum.seqs = append(sum.seqs, e.Seq)
			case f.written >= 0 || f.flags&fRemoved != 0:
				w := f.written
				if w < 0 {
					w = f.path // what it removed
				}
				if s.is(setNoise, w) {
					continue
				}
				if !seenW[w] {
					seenW[w] = true
					sum.outside = sum.outside || !s.inWorkspace(s.paths.strs[w])
					sum.writes = append(sum.writes, s.display(s.paths.strs[w]))
				}
				sum.seqs = append(sum.seqs, e.Seq)
			case f.flags&fRead != 0:
				if _, ok := s.matchOf(setSensitive, int(j), f.path); ok {
					sum.secret = true
					sum.seqs = append(sum.seqs, e.Seq)
				} else if _, ok := s.matchOf(setAgentConfig, int(j), f.path); ok {
					sum.secret = true
					sum.seqs = append(sum.seqs, e.Seq)
				}
				if !s.is(setSystem, f.path) && !s.is(setNoise, f.path) && !seenR[f.path] {
					seenR[f.path] = true
					sum.reads++
				}
			}
		}
	}
	return sum
}

func (s treeSummary) String() string {
	var parts []string
	if len(s.execs) > 0 {
		parts = append(parts, "ran "+list(s.execs, 5))
	}
	if s.children > 0 {
		parts = append(parts, plural(s.children, "child process", "child processes"))
	}
	if len(s.writes) > 0 {
		parts = append(parts, "wrote "+list(s.writes, 5))
	}
	if s.reads > 0 {
		parts = append(parts, "read "+plural(s.reads, "file", "files"))
	}
	if s.secret {
		parts = append(parts, "read credentials or agent configuration")
	}
	if len(s.hosts) > 0 {
		parts = append(parts, "connected to "+list(s.hosts, 5))
	}
	if len(parts) == 0 {
		return "nothing else recorded"
	}
	return strings.Join(parts, "; ")
}
