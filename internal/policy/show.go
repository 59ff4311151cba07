package policy

import (
	"bytes"
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Showing a policy
//
// `policy show` prints the policy in force as a policy file: every list
// in full and `defaults: false`, so that the document, loaded with
// --policy, is the same policy (policy_test.go checks the round trip),
// and a team can start its own file from it. Each key carries the
// comment docs/policy.md gives it.

// keyComments are the comments Marshal puts above each key.
var keyComments = map[string]string{
	"version":            "the policy file format",
	"defaults":           "false: the lists below replace the built-in ones (this document lists them in full)",
	"rules":              "every rule (docs/rules.md): enabled, and a severity replacing its findings' above info",
	"egress":             "the egress allowlist (unexpected-egress)",
	"allow":              "destinations connections may go to, besides the registries: host, address or CIDR, optional :PORT",
	"dns":                "allow port 53 to any address; the names queried are recorded either way",
	"registries":         "package registries and mirrors: allowed egress, and where package managers go",
	"publish_hosts":      "upload-only registry hosts: count toward mass-publish, not allowed egress",
	"sensitive_paths":    "credential stores (sensitive-read); clients: programs whose access is expected",
	"agent_config_paths": "agents' credentials and settings (agent-config-read)",
	"tamper_paths":       "agents' safety settings (sandbox-tamper)",
	"persistence_paths":  "where writing makes code run again later: login, cron, services, git hooks (persistence)",
	"privilege_paths":    "where writing changes who may do what: sudoers, passwd, PAM (privilege-escalation)",
	"noise_paths":        "paths ordinary work writes: not unmentioned writes, not noteworthy",
	"test_runners":       "commands that run tests (claim-tests-not-run)",
	"test_files":         "paths a real test run reads",
	"package_managers":   "commands that install packages (claim-install-mismatch)",
	"publish_commands":   "commands that publish packages or images (mass-publish)",
	"build_tools":        "programs whose output is expected to be executed (write-then-exec)",
	"artifacts":          "package artifacts (mass-publish)",
	"agent_programs":     "the agents' program names: without a transcript they stand in for the agent",
	"allowed_programs":   "an allowlist: when set, a program run outside it is unexpected-program",
	"allowed_paths":      "an allowlist: when set, a path read or written outside it (and the system directories) is unexpected-path",
	"thresholds":         "the numbers rules compare against",
	"kill":               "run --isolate only: what the kernel kills a process of the tree for (absolute paths or ~/; a directory covers what lies below it)",
	"exec":               "binaries the tree may not run",
	"write":              "files the tree may not open for writing",
	"exec_gate":          "run --isolate only: every exec waits for the integrity check; a modified binary does not run",
}

// Marshal writes p as a policy file with comments, one that Parse turns
// back into the same policy.
func (p *Policy) Marshal() ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	doc.HeadComment = fmt.Sprintf("polygraph policy (source: %s); docs/policy.md describes every key", p.Source)
	add := func(m *yaml.Node, key string, v *yaml.Node) {
		k := scalar(key)
		k.HeadComment = keyComments[key]
		m.Content = append(m.Content, k, v)
	}
	add(doc, "version", scalar("1"))
	add(doc, "defaults", boolNode(false))
	rules := &yaml.Node{Kind: yaml.MappingNode}
	for _, id := range RuleIDs() {
		s := p.Rules[id]
		r := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		r.Content = append(r.Content, scalar("enabled"), boolNode(s.Enabled))
		if s.Severity != "" {
			r.Content = append(r.Content, scalar("severity"), scalar(s.Severity))
		}
		rules.Content = append(rules.Content, scalar(id), r)
	}
	add(doc, "rules", rules)
	egress := &yaml.Node{Kind: yaml.MappingNode}
	add(egress, "allow", strList(p.Egress.Allow))
	add(egress, "dns", boolNode(p.Egress.DNS == nil || *p.Egress.DNS))
	add(doc, "egress", egress)
	for _, l := range []struct {
		key  string
		list []string
	}{
		{"registries", p.Registries}, {"publish_hosts", p.PublishHosts},
	} {
		add(doc, l.key, strList(l.list))
	}
	add(doc, "sensitive_paths", pathList(p.SensitivePaths))
	add(doc, "agent_config_paths", pathList(p.AgentConfigPaths))
	add(doc, "transcript_paths", pathList(p.TranscriptPaths))
	add(doc, "tamper_paths", pathList(p.TamperPaths))
	add(doc, "persistence_paths", pathList(p.PersistencePaths))
	add(doc, "privilege_paths", pathList(p.PrivilegePaths))
	for _, l := range []struct {
		key  string
		list []string
	}{
		{"noise_paths", p.NoisePaths}, {"test_runners", p.TestRunners}, {"test_files", p.TestFiles},
		{"package_managers", p.PackageManagers}, {"publish_commands", p.PublishCommands},
		{"build_tools", p.BuildTools}, {"artifacts", p.Artifacts}, {"agent_programs", p.AgentPrograms}, {"unix_peers", p.UnixPeers},
		{"allowed_programs", p.AllowedPrograms}, {"allowed_paths", p.AllowedPaths},
	} {
		add(doc, l.key, strList(l.list))
	}
	th := &yaml.Node{Kind: yaml.MappingNode}
	t := p.Thresholds
	th.Content = append(th.Content,
		scalar("publish_count"), scalar(strconv.Itoa(t.PublishCount)),
		scalar("artifacts"), scalar(strconv.Itoa(t.Artifacts)),
		scalar("registry_bytes_sent"), scalar(strconv.FormatUint(t.RegistryBytesSent, 10)),
		scalar("test_min_duration"), scalar(t.TestMinDuration.String()),
		scalar("dns_window"), scalar(t.DNSWindow.String()))
	add(doc, "thresholds", th)
	kill := &yaml.Node{Kind: yaml.MappingNode}
	add(kill, "exec", strList(p.Kill.Exec))
	add(kill, "write", strList(p.Kill.Write))
	add(doc, "kill", kill)
	add(doc, "exec_gate", boolNode(p.ExecGate))
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

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// strScalar is a string value, quoted when YAML would read it otherwise.
func strScalar(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	return n
}

func boolNode(v bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
}

// strList is a list of strings; an empty one is written [].
func strList(list []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	if len(list) == 0 {
		n.Style = yaml.FlowStyle
	}
	for _, s := range list {
		n.Content = append(n.Content, strScalar(s))
	}
	return n
}

// pathList is a list of PathRules: the pattern alone when that is all.
func pathList(list []PathRule) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	if len(list) == 0 {
		n.Style = yaml.FlowStyle
	}
	for _, r := range list {
		if len(r.Clients) == 0 && r.Severity == "" {
			n.Content = append(n.Content, strScalar(r.Path))
			continue
		}
		m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		m.Content = append(m.Content, scalar("path"), strScalar(r.Path))
		if len(r.Clients) > 0 {
			c := strList(r.Clients)
			c.Style = yaml.FlowStyle
			m.Content = append(m.Content, scalar("clients"), c)
		}
		if r.Severity != "" {
			m.Content = append(m.Content, scalar("severity"), scalar(r.Severity))
		}
		n.Content = append(n.Content, m)
	}
	return n
}
