package detect

import (
	"fmt"
	"regexp"
	"strings"
)

func init() {
	register(&Rule{
		ID:         "fileless-exec",
		Summary:    "a program executed from memory (memfd), /dev/shm, a /proc file descriptor or a deleted file",
		Severity:   SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1620"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		// remote-code-exec supersedes it for downloaded code.
		Needs: []string{"remote-code-exec"},
		check: filelessExec,
	})
}

var reProcFD = regexp.MustCompile(`^/proc/(?:self|thread-self|\d+)/fd/`)

// fileless reports whether an exec path is a program that has no file: a
// memfd, shared memory, a file descriptor, or a deleted file.
func fileless(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "/memfd:"), strings.HasPrefix(p, "memfd:"):
		return "a memfd (anonymous memory file)", true
	case strings.HasPrefix(p, "/dev/shm/"):
		return "shared memory (/dev/shm)", true
	case strings.HasPrefix(p, "/proc/") && reProcFD.MatchString(p), strings.HasPrefix(p, "/dev/fd/"):
		return "a file descriptor", true
	case strings.HasSuffix(p, " (deleted)"):
		return "a file deleted while it ran", true
	}
	return "", false
}

// filelessExec is the fileless-exec rule.
func filelessExec(s *run) []Finding {
	var out []Finding
	superseded := supersededExecs(s.needs)
	for _, i := range s.execs {
		e := s.events[i]
		what, ok := fileless(e.Path)
		if !ok || superseded[e.Seq] {
			continue
		}
		call, who := s.actor(e)
		detail := fmt.Sprintf("%s executed %s from %s: `%s`.", who, e.Path, what, excerpt(strings.Join(e.Argv, " "), 160))
		out = append(out, s.finding(s.rule.Severity,
			"Program executed without a file: "+e.Path, detail, call, []uint64{e.Seq}, false))
	}
	return out
}
