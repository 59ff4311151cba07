package policy

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Learning an allowlist
//
// A team that wants "only what last week's runs did" records those runs
// and has `policy learn` write a policy file allowing just that: the
// destinations the trees reached that the policy did not allow already,
// the programs they ran and the places they read and wrote. The file
// extends the built-in policy (the model APIs and registries stay
// allowed); setting allowed_programs and allowed_paths switches the
// unexpected-program and unexpected-path rules on.

// Normalise gives path in the form a learned policy and a baseline name
// it by, so that it means the same in another session: relative to the
// workspace cwd as ./REST ("." for cwd itself), else relative to the home
// as ~/REST (homeForm: the session's home, /root, /home/NAME), else as it
// is. A relative path (one the kernel could not resolve) is taken to be
// the workspace's.
func Normalise(p, cwd, home string) string {
	if p != "" && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, "./") {
		return "./" + path.Clean(p)
	}
	if cwd = strings.TrimRight(cwd, "/"); cwd != "" {
		if p == cwd {
			return "."
		}
		if rest, ok := strings.CutPrefix(p, cwd+"/"); ok {
			return "./" + rest
		}
	}
	if h, ok := homeForm(p, home); ok {
		return h
	}
	if home = strings.TrimRight(home, "/"); home != "" && p == home {
		return "~"
	}
	return p
}

// Learned is what recorded sessions used.
type Learned struct {
	// Sessions are the ids of the sessions learned from.
	Sessions []string
	// Egress are the destinations (host:port) the policy did not allow.
	Egress []string
	// Programs are the names of the programs run.
	Programs []string
	// Dirs are the directories of the files read and written, normalised
	// (Normalise), outside the system directories.
	Dirs []string
}

// collapseAt is how many patterns under one top directory a learned
// policy lists before it allows the whole directory instead: a tree of
// dependencies is one entry, not hundreds.
const collapseAt = 8

// PathPatterns generalises normalised directories into allowed_paths
// patterns: a directory two or more levels below the workspace, the home
// or / allows everything under its first two levels (./src/pkg/**,
// ~/.cache/go-build/**); a shallower one the files directly in it (./*,
// ~/.ssh/*); DIR/* (what a baseline keeps for a temporary directory)
// anything under DIR. More than collapseAt patterns under one top directory become
// that directory's /**.
func PathPatterns(dirs []string) []string {
	type split struct{ anchor, top, pattern string }
	var all []split
	for _, d := range dirs {
		anchor, rest := "/", strings.TrimPrefix(d, "/")
		switch {
		case d == "." || strings.HasPrefix(d, "./"):
			anchor, rest = "./", strings.TrimPrefix(strings.TrimPrefix(d, "."), "/")
		case d == "~" || strings.HasPrefix(d, "~/"):
			anchor, rest = "~/", strings.TrimPrefix(strings.TrimPrefix(d, "~"), "/")
		}
		var comps []string
		if rest != "" {
			comps = strings.Split(path.Clean(rest), "/")
		}
		sp := split{anchor: anchor}
		switch {
		case strings.HasSuffix(d, "/*"):
			// Somewhere under a directory of per-run names (/tmp/*).
			sp.pattern = d + "*"
		case len(comps) >= 2:
			sp.top = comps[0]
			sp.pattern = anchor + comps[0] + "/" + comps[1] + "/**"
		case len(comps) == 1:
			sp.top = comps[0]
			sp.pattern = anchor + comps[0] + "/*"
		default:
			sp.pattern = anchor + "*"
		}
		all = append(all, sp)
	}
	under := map[string]map[string]bool{}
	for _, sp := range all {
		if sp.top == "" {
			continue
		}
		k := sp.anchor + sp.top
		if under[k] == nil {
			under[k] = map[string]bool{}
		}
		under[k][sp.pattern] = true
	}
	var out []string
	for _, sp := range all {
		p := sp.pattern
		if k := sp.anchor + sp.top; sp.top != "" && len(under[k]) > collapseAt {
			p = k + "/**"
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// AllowlistFile writes the policy file that allows what l used and, for
// programs and paths, nothing else.
func AllowlistFile(l Learned) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	doc.HeadComment = fmt.Sprintf("An allowlist policy learned by `polygraph policy learn` from %d session(s):\n%s\nIt extends the built-in policy; docs/policy.md describes it.",
		len(l.Sessions), "  "+strings.Join(l.Sessions, "\n  "))
	add := func(m *yaml.Node, key, comment string, v *yaml.Node) {
		k := scalar(key)
		k.HeadComment = comment
		m.Content = append(m.Content, k, v)
	}
	sorted := func(list []string) []string {
		out := slices.Clone(list)
		slices.Sort(out)
		return slices.Compact(out)
	}
	add(doc, "version", "", scalar("1"))
	egress := &yaml.Node{Kind: yaml.MappingNode}
	add(egress, "allow", "the destinations the sessions reached beyond the built-in allowlist", strList(sorted(l.Egress)))
	add(doc, "egress", "", egress)
	add(doc, "allowed_programs", keyComments["allowed_programs"], strList(sorted(l.Programs)))
	add(doc, "allowed_paths", keyComments["allowed_paths"], strList(PathPatterns(l.Dirs)))
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return b.Bytes(), nil
}
