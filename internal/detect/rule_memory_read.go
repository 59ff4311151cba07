package detect

import (
	"path"

	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:         "memory-read",
		Scope:      ScopeEvent,
		Kinds:      []event.Kind{event.KindMemRead},
		Summary:    "a read of another process's memory or registers (ptrace peeks, process_vm_readv, /proc/PID/mem): outside the tree high, of a credential holder critical, inside the tree low",
		Severity:   SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1003"}, OWASPLLM: []string{"LLM02"}, SAIF: []string{saifSensitive}},
		Escalated:  Frameworks{ATTACK: []string{"T1555"}},
		Escalation: "the target is a credential holder: an SSH or GPG agent, a keyring, a password manager",
		check:      memoryRead,
	})
}

// credentialHolders are the programs whose memory holds credentials a
// reader is after (by executable name).
var credentialHolders = map[string]bool{"ssh-agent": true, "gpg-agent": true, "gnome-keyring-daemon": true,
	"kwalletd5": true, "kwalletd6": true, "keepassxc": true, "1password": true, "bitwarden": true,
	"secret-tool": true, "pass": true, "sshd": true}

// memoryRead is the memory-read rule: the tree read another process's
// memory, which is where agents, keyrings and browsers keep what they do
// not write to disk. Reads do not adopt the target: the read itself is
// the act.
func memoryRead(s *run) []Finding {
	fs := perTarget(s, event.KindMemRead, func(e *event.Event, outside bool) (Severity, string) {
		switch {
		case !outside:
			return SeverityLow, "Read of a traced process's memory: " + e.Method()
		case credentialHolders[path.Base(e.TargetExe())] && !e.Failed():
			return SeverityCritical, "Read of a credential holder's memory: " + e.Method()
		case e.Failed():
			return SeverityMedium, "Read of another process's memory: " + e.Method()
		}
		return s.rule.Severity, "Read of another process's memory: " + e.Method()
	})
	for i := range fs {
		if fs[i].Severity == SeverityCritical {
			fs[i].Frameworks = fs[i].Frameworks.Merge(s.rule.Escalated)
		}
	}
	return fs
}
