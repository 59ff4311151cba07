package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/correlate"
)

// ExecIntegrity is what the integrity check said of one file a tool
// call's processes executed (docs/integrity.md): the binary or the script
// an interpreter ran, its hash, the verdict and the source behind it.
type ExecIntegrity struct {
	Path    string `json:"path"`
	Role    string `json:"role,omitempty"` // binary, script
	SHA256  string `json:"sha256,omitempty"`
	Verdict string `json:"verdict"`          // verified, modified, unknown, unavailable
	Source  string `json:"source,omitempty"` // pin, dpkg, first-seen
	Package string `json:"package,omitempty"`
	// Of is the packaged program a file shadowing it was judged against.
	Of string `json:"of,omitempty"`
	// Expected is the hash Source lists, for a modified file.
	Expected string `json:"expected,omitempty"`
	// Reason says why a file could not be checked.
	Reason string `json:"reason,omitempty"`
}

// AddIntegrity gives each tool call's kernel view the verdicts on the
// files its execs ran, byExec being keyed by exec id; a file run several
// times with one hash is listed once. Sessions recorded without
// integrity checking have no verdicts and their reports do not change.
func (r *Report) AddIntegrity(attr *correlate.Result, byExec map[string][]ExecIntegrity) {
	if attr == nil || len(byExec) == 0 {
		return
	}
	for _, v := range r.ToolCalls {
		a := attr.ByCall[v.Call.ID]
		if v.Kernel == nil || a == nil {
			continue
		}
		type key struct{ role, path, sha string }
		seen := map[key]bool{}
		for _, e := range a.Execs {
			for _, x := range byExec[e.ExecID] {
				k := key{x.Role, x.Path, x.SHA256}
				if !seen[k] {
					seen[k] = true
					v.Kernel.Integrity = append(v.Kernel.Integrity, x)
				}
			}
		}
	}
}

// integrityLine sums up a call's verdicts for the text report: how many
// files were verified against what, and each file that was not.
func integrityLine(xs []ExecIntegrity) string {
	verified := map[string]int{}
	var others []string
	for _, x := range xs {
		switch x.Verdict {
		case "verified":
			verified[x.Source]++
		case "modified":
			against := x.Source
			if x.Package != "" {
				against += " " + x.Package
			}
			if x.Of != "" {
				against += " for " + x.Of
			}
			others = append(others, fmt.Sprintf("MODIFIED %s (against %s)", x.Path, against))
		case "unknown":
			others = append(others, "unknown "+x.Path)
		default:
			others = append(others, fmt.Sprintf("unchecked %s (%s)", x.Path, x.Reason))
		}
	}
	var parts []string
	if len(verified) > 0 {
		n, srcs := 0, []string{}
		for _, s := range slices.Sorted(maps.Keys(verified)) {
			n += verified[s]
			srcs = append(srcs, fmt.Sprintf("%s %d", s, verified[s]))
		}
		parts = append(parts, fmt.Sprintf("%d verified (%s)", n, strings.Join(srcs, ", ")))
	}
	if len(others) > 0 {
		parts = append(parts, listed(others, 4))
	}
	return strings.Join(parts, "; ")
}
