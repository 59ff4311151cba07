package integrity

import (
	"fmt"
	"strings"
)

// The rules verdicts feed. A detect rule owns the finding; this package
// only says which verdict is worth one, so the judgement lives next to the
// data it reads.
const (
	RuleBinaryModified  = "binary-modified"
	RuleUntrustedBinary = "untrusted-binary"
)

// Finding is what a detect rule needs to raise a finding from a verdict,
// in plain strings so this package does not depend on detect.
type Finding struct {
	Rule     string
	Severity string // detect.Severity's values
	Title    string
	Detail   string
	ATTACK   []string
	ATLAS    []string
	OWASPLLM []string
}

// Finding says whether v is worth a finding, and which. A modified file is
// always one: a source the user trusts knows it by another hash. An
// unknown file is one only where it sits is suspicious, since most
// unknown binaries are the user's own builds and tools.
func (v Verdict) Finding() (Finding, bool) {
	switch v.Status {
	case Modified:
		sev := "high"
		if v.Source == SourceFirstSeen {
			// An upgrade nobody told us about looks the same.
			sev = "medium"
		}
		d := fmt.Sprintf("%s %s has %s %s; %s lists %s", v.Role, v.Path, v.ExpectedAlgo, v.actual(), v.sourceName(), v.Expected)
		title := fmt.Sprintf("%s %s differs from what %s lists", v.Role, v.Path, v.sourceName())
		if v.Of != "" {
			d += fmt.Sprintf(" for %s, which it shadows (sha256 %s)", v.Of, v.SHA256)
			title = fmt.Sprintf("%s %s passes for %s but differs from what %s lists", v.Role, v.Path, v.Of, v.sourceName())
		}
		return Finding{
			Rule:     RuleBinaryModified,
			Severity: sev,
			Title:    title,
			Detail:   d,
			ATTACK:   []string{"T1554", "T1195.002"},
			ATLAS:    []string{"AML.T0010"},
			OWASPLLM: []string{"LLM03"},
		}, true
	case Unknown:
		if !v.Location.Suspicious() {
			return Finding{}, false
		}
		// The workspace wins over temp (a project under /tmp is still the
		// project): running its own scripts and builds is the agent's
		// normal loop, information only. Elsewhere in temp or downloads
		// it is low; in front of a tool of the same name, medium.
		sev := "low"
		switch {
		case v.Location.Shadows != "":
			sev = "medium"
		case v.Location.Workspace && !v.Location.Download:
			sev = "info"
		}
		return Finding{
			Rule:     RuleUntrustedBinary,
			Severity: sev,
			Title:    fmt.Sprintf("unverified %s %s ran from %s", v.Role, v.Path, strings.Join(v.Location.reasons(), ", ")),
			Detail:   fmt.Sprintf("no pin, package or earlier sighting vouches for sha256 %s", v.SHA256),
			ATTACK:   []string{"T1204.002", "T1036.005"},
			ATLAS:    []string{"AML.T0010"},
			OWASPLLM: []string{"LLM03"},
		}, true
	}
	return Finding{}, false
}

// actual is the hash of v in the algorithm its source compared.
func (v Verdict) actual() string {
	if v.ExpectedAlgo == "md5" {
		return v.MD5
	}
	return v.SHA256
}

func (v Verdict) sourceName() string {
	switch v.Source {
	case SourcePin:
		return "the pin file"
	case SourceDpkg:
		return "dpkg package " + v.Package
	case SourceFirstSeen:
		return "the hash first seen on this host"
	}
	return string(v.Source)
}

// reasons names the flags that are set, for a title.
func (l *Location) reasons() []string {
	var r []string
	if l.Workspace {
		r = append(r, "the workspace")
	}
	if l.Temp {
		r = append(r, "a temp directory")
	}
	if l.Download {
		r = append(r, "a downloads directory")
	}
	if l.UserWritable {
		r = append(r, "a user-writable directory")
	}
	if l.Shadows != "" {
		r = append(r, "shadowing "+l.Shadows)
	}
	return r
}
