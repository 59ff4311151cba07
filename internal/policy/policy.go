// Package policy holds what polygraph's detection rules are tuned with:
// the policy file that switches rules off, changes their severities and
// sets the lists and thresholds they use (egress allowlist, package
// registries, credential paths, test runners, publish commands). The
// rules themselves, with their framework ids, are internal/detect's; it
// registers their ids here (RegisterRule). docs/policy.md documents the
// file; docs/rules.md the rules.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/untrusted"
)

// Sentinel errors callers test with errors.Is.
var (
	// ErrUnknownKey: the policy file has a key polygraph does not know.
	ErrUnknownKey = errors.New("unknown key")
	// ErrUnknownRule: the policy file names a rule that does not exist.
	ErrUnknownRule = errors.New("unknown rule")
	// ErrBadSeverity: a severity that is not info, low, medium, high or critical.
	ErrBadSeverity = errors.New("bad severity")
)

// Severities lists the severity names, lowest first (internal/detect's).
var Severities = []string{"info", "low", "medium", "high", "critical"}

// ValidSeverity reports whether s is one of Severities.
func ValidSeverity(s string) bool { return slices.Contains(Severities, s) }

// RuleSetting is what the policy says about one rule.
type RuleSetting struct {
	Enabled bool
	// Severity, when set, replaces the severity of every finding of the
	// rule above info (info findings note expected activity and stay info).
	Severity string
}

// Egress is the egress allowlist.
type Egress struct {
	// Allow lists the destinations connections may go to besides the
	// registries: host names, addresses or CIDR prefixes, each with an
	// optional :PORT (see match.go). Loopback is not allowed wholesale: a
	// process reaching a loopback port is as much a finding as one
	// reaching the internet, unless the traced tree itself serves that
	// port or the entry allows it.
	Allow []string `yaml:"allow"`
	// DNS allows port 53 (UDP or TCP) to the system's resolvers, for
	// messages that parse as DNS: the traffic every name lookup makes. The
	// rules decide what a resolver is (see AllowDNS).
	DNS *bool `yaml:"dns"`
}

// Thresholds are the numbers rules compare against.
type Thresholds struct {
	// PublishCount publish commands in one session make a mass publish.
	PublishCount int `yaml:"publish_count"`
	// Artifacts package artifacts (*.tgz, *.whl, …) built in one session
	// count as many.
	Artifacts int `yaml:"artifacts"`
	// RegistryBytesSent bytes sent to registry hosts in one session is far
	// beyond what an install sends.
	RegistryBytesSent uint64 `yaml:"registry_bytes_sent"`
	// TestMinDuration: a test run that ends sooner without reading a test
	// file did not really run tests.
	TestMinDuration time.Duration `yaml:"test_min_duration"`
	// DNSWindow: a connection is taken to go to the name its process looked
	// up last, within this window before it, when nothing better names it.
	DNSWindow time.Duration `yaml:"dns_window"`
}

// Policy is a loaded policy: the built-in one, or the built-in one adjusted
// by a policy file. Use Default or Load; the zero value matches nothing.
type Policy struct {
	// Source is where the policy came from: "built-in" or the file's path.
	Source string
	// Rules has one entry for every registered rule id (RuleIDs).
	Rules map[string]RuleSetting

	Egress           Egress
	Registries       []string
	PublishHosts     []string
	SensitivePaths   []PathRule
	AgentConfigPaths []PathRule
	TranscriptPaths  []PathRule
	TamperPaths      []PathRule
	PersistencePaths []PathRule
	PrivilegePaths   []PathRule
	NoisePaths       []string
	TestRunners      []string
	TestFiles        []string
	PackageManagers  []string
	PublishCommands  []string
	BuildTools       []string
	Artifacts        []string
	AgentPrograms    []string
	// UnixPeers are the programs outside the tree its processes may
	// reach over Unix sockets and FIFOs (escaped-tree).
	UnixPeers []string
	// AllowedPrograms and AllowedPaths are an allowlist policy's (one
	// `policy learn` writes): when set, unexpected-program reports every
	// program run outside AllowedPrograms and unexpected-path every path
	// read or written outside AllowedPaths (and the system directories).
	// Empty, the default, those rules report nothing.
	AllowedPrograms []string
	AllowedPaths    []string
	Thresholds      Thresholds
	// Kill and ExecGate apply to isolated runs only (run --isolate):
	// ExecGate stops every exec of the tree until the integrity check
	// has judged its binary, and kills a modified one.
	Kill     Kill
	ExecGate bool

	// Compiled forms, built by compile.
	egress, registries, publishHosts      []hostRule
	sensitive, agentConfig, tamper        *PathSet
	transcripts                           *PathSet
	persistence, privilege                *PathSet
	noise, testFiles, artifacts           *PathSet
	allowedPaths                          *PathSet
	testRunners, packageManagers, publish *CommandSet

	// protected are the tamper paths Protect added: the policy file
	// itself, which is not part of what the policy says (show leaves it
	// out).
	protected []PathRule
}

// Default returns the built-in policy.
func Default() *Policy {
	p := &Policy{
		Source:           "built-in",
		Rules:            map[string]RuleSetting{},
		Egress:           Egress{Allow: slices.Clone(DefaultModelAPIs), DNS: ptr(true)},
		Registries:       slices.Clone(DefaultRegistries),
		PublishHosts:     slices.Clone(DefaultPublishHosts),
		SensitivePaths:   slices.Clone(DefaultSensitivePaths),
		AgentConfigPaths: slices.Clone(DefaultAgentConfigPaths),
		TranscriptPaths:  slices.Clone(DefaultTranscriptPaths),
		TamperPaths:      slices.Clone(DefaultTamperPaths),
		PersistencePaths: slices.Clone(DefaultPersistencePaths),
		PrivilegePaths:   slices.Clone(DefaultPrivilegePaths),
		NoisePaths:       slices.Clone(DefaultNoisePaths),
		TestRunners:      slices.Clone(DefaultTestRunners),
		TestFiles:        slices.Clone(DefaultTestFiles),
		PackageManagers:  slices.Clone(DefaultPackageManagers),
		PublishCommands:  slices.Clone(DefaultPublishCommands),
		BuildTools:       slices.Clone(DefaultBuildTools),
		Artifacts:        slices.Clone(DefaultArtifacts),
		AgentPrograms:    slices.Clone(DefaultAgentPrograms),
		UnixPeers:        slices.Clone(DefaultUnixPeers),
		Thresholds:       DefaultThresholds,
	}
	for _, id := range ruleIDs {
		p.Rules[id] = RuleSetting{Enabled: true}
	}
	if err := p.compile(); err != nil {
		panic("built-in policy: " + err.Error()) // policy_test.go keeps this from happening
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// file is the policy file's shape. Its yaml tags are the file's keys.
type file struct {
	Version  int                 `yaml:"version"`
	Defaults *bool               `yaml:"defaults"`
	Rules    map[string]ruleFile `yaml:"rules"`
	Egress   *Egress             `yaml:"egress"`

	Registries       []string        `yaml:"registries"`
	PublishHosts     []string        `yaml:"publish_hosts"`
	SensitivePaths   []PathRule      `yaml:"sensitive_paths"`
	AgentConfigPaths []PathRule      `yaml:"agent_config_paths"`
	TranscriptPaths  []PathRule      `yaml:"transcript_paths"`
	TamperPaths      []PathRule      `yaml:"tamper_paths"`
	PersistencePaths []PathRule      `yaml:"persistence_paths"`
	PrivilegePaths   []PathRule      `yaml:"privilege_paths"`
	NoisePaths       []string        `yaml:"noise_paths"`
	TestRunners      []string        `yaml:"test_runners"`
	TestFiles        []string        `yaml:"test_files"`
	PackageManagers  []string        `yaml:"package_managers"`
	PublishCommands  []string        `yaml:"publish_commands"`
	BuildTools       []string        `yaml:"build_tools"`
	Artifacts        []string        `yaml:"artifacts"`
	AgentPrograms    []string        `yaml:"agent_programs"`
	UnixPeers        []string        `yaml:"unix_peers"`
	AllowedPrograms  []string        `yaml:"allowed_programs"`
	AllowedPaths     []string        `yaml:"allowed_paths"`
	Thresholds       *thresholdsFile `yaml:"thresholds"`
	Kill             *Kill           `yaml:"kill"`
	ExecGate         *bool           `yaml:"exec_gate"`
}

type ruleFile struct {
	Enabled  *bool  `yaml:"enabled"`
	Severity string `yaml:"severity"`
}

type thresholdsFile struct {
	PublishCount      *int           `yaml:"publish_count"`
	Artifacts         *int           `yaml:"artifacts"`
	RegistryBytesSent *uint64        `yaml:"registry_bytes_sent"`
	TestMinDuration   *time.Duration `yaml:"test_min_duration"`
	DNSWindow         *time.Duration `yaml:"dns_window"`
}

// MaxFileBytes bounds a policy file Load reads: a FIFO, a device or a
// file larger than this is refused in one line (untrusted.ReadFile).
const MaxFileBytes = 16 << 20

// Load reads a policy file (YAML; JSON is YAML too) and applies it to the
// built-in policy.
func Load(path string) (*Policy, error) {
	data, err := untrusted.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return Parse(data, path)
}

// Parse applies the policy file content data, named name in errors, to the
// built-in policy. Errors are one line: "name:LINE: what".
func Parse(data []byte, name string) (*Policy, error) {
	p := Default()
	p.Source = name
	if len(bytes.TrimSpace(data)) == 0 {
		return p, nil
	}
	f, root, errs := decodeFile(data, name)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	if err := p.setRules(f.Rules, root, name); err != nil {
		return nil, err
	}
	extend := f.Defaults == nil || *f.Defaults
	strs := func(dst *[]string, src []string) {
		if !extend {
			*dst = nil
		}
		*dst = append(*dst, src...)
	}
	if f.Egress != nil {
		strs(&p.Egress.Allow, f.Egress.Allow)
		if f.Egress.DNS != nil {
			p.Egress.DNS = f.Egress.DNS
		}
	} else if !extend {
		p.Egress.Allow = nil
	}
	strs(&p.Registries, f.Registries)
	strs(&p.PublishHosts, f.PublishHosts)
	// A file's own path entries come first, so they win over the
	// built-in ones for the same file.
	prepend := func(dst *[]PathRule, src []PathRule) {
		if !extend {
			*dst = nil
		}
		*dst = append(slices.Clone(src), *dst...)
	}
	prepend(&p.SensitivePaths, f.SensitivePaths)
	prepend(&p.AgentConfigPaths, f.AgentConfigPaths)
	prepend(&p.TranscriptPaths, f.TranscriptPaths)
	prepend(&p.TamperPaths, f.TamperPaths)
	prepend(&p.PersistencePaths, f.PersistencePaths)
	prepend(&p.PrivilegePaths, f.PrivilegePaths)
	strs(&p.NoisePaths, f.NoisePaths)
	strs(&p.TestRunners, f.TestRunners)
	strs(&p.TestFiles, f.TestFiles)
	strs(&p.PackageManagers, f.PackageManagers)
	strs(&p.PublishCommands, f.PublishCommands)
	strs(&p.BuildTools, f.BuildTools)
	strs(&p.Artifacts, f.Artifacts)
	strs(&p.AgentPrograms, f.AgentPrograms)
	strs(&p.UnixPeers, f.UnixPeers)
	strs(&p.AllowedPrograms, f.AllowedPrograms)
	strs(&p.AllowedPaths, f.AllowedPaths)
	if f.Thresholds != nil {
		f.Thresholds.apply(&p.Thresholds)
	}
	if f.Kill != nil && len(f.Kill.Exec)+len(f.Kill.Write) > 0 {
		// An empty section (`policy show` writes `exec: []`) is none.
		p.Kill = *f.Kill
	}
	if f.ExecGate != nil {
		p.ExecGate = *f.ExecGate
	}
	if err := checkKill(p.Kill); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := p.compile(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// apply sets the thresholds the file gives in th.
func (t *thresholdsFile) apply(th *Thresholds) {
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&th.PublishCount, t.PublishCount)
	set(&th.Artifacts, t.Artifacts)
	if t.RegistryBytesSent != nil {
		th.RegistryBytesSent = *t.RegistryBytesSent
	}
	if t.TestMinDuration != nil {
		th.TestMinDuration = *t.TestMinDuration
	}
	if t.DNSWindow != nil {
		th.DNSWindow = *t.DNSWindow
	}
}

// setRules applies the file's rules section, rules, to p; root is the
// file's YAML tree, for the lines of errors.
func (p *Policy) setRules(rules map[string]ruleFile, root *yaml.Node, name string) error {
	for id, r := range rules {
		if !knownRule(id) {
			return fmt.Errorf("%s:%d: %w %q (rules: %s)", name, keyLine(root, "rules", id), ErrUnknownRule, id, strings.Join(RuleIDs(), ", "))
		}
		s := p.Rules[id]
		if r.Enabled != nil {
			s.Enabled = *r.Enabled
		}
		if r.Severity != "" {
			if !ValidSeverity(r.Severity) {
				return fmt.Errorf("%s:%d: rule %s: %w %q (want one of %s)", name, keyLine(root, "rules", id), id, ErrBadSeverity, r.Severity, strings.Join(Severities, ", "))
			}
			s.Severity = r.Severity
		}
		p.Rules[id] = s
	}
	return nil
}

// compile builds the matchers from the lists.
func (p *Policy) compile() error {
	var err error
	if p.egress, err = compileHostRules(p.Egress.Allow); err != nil {
		return fmt.Errorf("egress.allow: %w", err)
	}
	if p.registries, err = compileHostRules(p.Registries); err != nil {
		return fmt.Errorf("registries: %w", err)
	}
	if p.publishHosts, err = compileHostRules(p.PublishHosts); err != nil {
		return fmt.Errorf("publish_hosts: %w", err)
	}
	for _, l := range []struct {
		key string
		src []PathRule
		dst **PathSet
	}{
		{"sensitive_paths", p.SensitivePaths, &p.sensitive},
		{"agent_config_paths", p.AgentConfigPaths, &p.agentConfig},
		{"transcript_paths", p.TranscriptPaths, &p.transcripts},
		{"tamper_paths", append(slices.Clone(p.protected), p.TamperPaths...), &p.tamper},
		{"persistence_paths", p.PersistencePaths, &p.persistence},
		{"privilege_paths", p.PrivilegePaths, &p.privilege},
		{"noise_paths", plainRules(p.NoisePaths), &p.noise},
		{"test_files", plainRules(p.TestFiles), &p.testFiles},
		{"artifacts", plainRules(p.Artifacts), &p.artifacts},
		{"allowed_paths", plainRules(p.AllowedPaths), &p.allowedPaths},
	} {
		if *l.dst, err = compilePathSet(l.src); err != nil {
			return fmt.Errorf("%s: %w", l.key, err)
		}
	}
	for _, l := range []struct {
		key string
		src []string
		dst **CommandSet
	}{
		{"test_runners", p.TestRunners, &p.testRunners},
		{"package_managers", p.PackageManagers, &p.packageManagers},
		{"publish_commands", p.PublishCommands, &p.publish},
	} {
		if *l.dst, err = compileCommands(l.src); err != nil {
			return fmt.Errorf("%s: %w", l.key, err)
		}
	}
	return nil
}

func plainRules(list []string) []PathRule {
	out := make([]PathRule, len(list))
	for i, s := range list {
		out[i] = PathRule{Path: s}
	}
	return out
}

// Enabled reports whether rule id is switched on.
func (p *Policy) Enabled(id string) bool {
	s, ok := p.Rules[id]
	return ok && s.Enabled
}

// SeverityOverride returns the severity the policy sets for rule id, or "".
func (p *Policy) SeverityOverride(id string) string { return p.Rules[id].Severity }

// AllowEgress reports whether a connection to addr:port is allowed by the
// egress allowlist or the registries. host is the DNS name the process
// used for addr, "" when unknown; a name entry matches only a known name,
// an address entry only the address. Port 53 is no exception: DNS is
// allowed only to the system's resolvers (AllowDNS), which the caller
// knows and the policy does not.
func (p *Policy) AllowEgress(host, addr string, port uint16) bool {
	return matchHosts(p.egress, host, addr, port) || matchHosts(p.registries, host, addr, port)
}

// IsRegistry reports whether the destination is a configured registry.
func (p *Policy) IsRegistry(host, addr string, port uint16) bool {
	return matchHosts(p.registries, host, addr, port)
}

// IsPublishHost reports whether the destination is a registry or an upload
// host: where a publish goes.
func (p *Policy) IsPublishHost(host, addr string, port uint16) bool {
	return matchHosts(p.registries, host, addr, port) || matchHosts(p.publishHosts, host, addr, port)
}

// Allow adds an egress entry (see Egress.Allow) to the allowlist.
func (p *Policy) Allow(entry string) error {
	r, err := parseHostRule(entry)
	if err != nil {
		return err
	}
	p.Egress.Allow = append(p.Egress.Allow, entry)
	p.egress = append(p.egress, r)
	return nil
}

// AllowURL allows the host and port of a base URL, such as the model
// endpoint an agent was configured with (http://127.0.0.1:8080).
func (p *Policy) AllowURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("not a URL with a host: %q", raw)
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "http", "ws":
			port = "80"
		default:
			port = "443"
		}
	}
	return p.Allow(net.JoinHostPort(u.Hostname(), port))
}

// AgentEndpointVars are the environment variables that point an agent at
// its model API, from the agent profiles.
var AgentEndpointVars = agent.EndpointVars()

// AllowAgentEndpoints allows the model endpoints named by AgentEndpointVars
// in env (KEY=VALUE pairs, as os.Environ gives them): the endpoint an agent
// was configured with is expected traffic even on loopback, where nothing
// else is allowed by default. It returns the entries it added.
func (p *Policy) AllowAgentEndpoints(env []string) []string {
	var added []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" || !slices.Contains(AgentEndpointVars, k) {
			continue
		}
		n := len(p.Egress.Allow)
		if p.AllowURL(v) == nil {
			added = append(added, p.Egress.Allow[n:]...)
		}
	}
	return added
}

// Sensitive returns the sensitive-path entry p matches.
func (p *Policy) Sensitive(path, home string) (PathRule, bool) { return p.sensitive.Match(path, home) }

// AgentConfig returns the agent-config entry p matches.
func (p *Policy) AgentConfig(path, home string) (PathRule, bool) {
	return p.agentConfig.Match(path, home)
}

// Transcript returns the transcript-location entry p matches.
func (p *Policy) Transcript(path, home string) (PathRule, bool) {
	return p.transcripts.Match(path, home)
}

// Protect makes path (the policy file itself, given on the command line)
// a tamper path of severity high: the traced tree writing it during the
// session is a sandbox-tamper finding, since the next run that reads it
// would apply what the tree wrote.
func (p *Policy) Protect(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	p.protected = append(p.protected, PathRule{Path: abs, Severity: "high"})
	return p.compile()
}

// Tamper returns the safety-settings entry p matches.
func (p *Policy) Tamper(path, home string) (PathRule, bool) { return p.tamper.Match(path, home) }

// Noise reports whether writes to path are ordinary noise.
func (p *Policy) Noise(path, home string) bool { return p.noise.Has(path, home) }

// TestFile reports whether path is a test file.
func (p *Policy) TestFile(path, home string) bool { return p.testFiles.Has(path, home) }

// Artifact reports whether path is a package artifact.
func (p *Policy) Artifact(path, home string) bool { return p.artifacts.Has(path, home) }

// TestRunner returns the test-runner pattern argv matches.
func (p *Policy) TestRunner(argv []string) (string, bool) { return p.testRunners.Match(argv) }

// PackageManager returns the package-manager pattern argv matches.
func (p *Policy) PackageManager(argv []string) (string, bool) { return p.packageManagers.Match(argv) }

// Publish returns the publish-command pattern argv matches.
func (p *Policy) Publish(argv []string) (string, bool) { return p.publish.Match(argv) }

// BuildTool reports whether a process going by names is a build tool.
func (p *Policy) BuildTool(names []string) bool { return NameSet(p.BuildTools).Has(names) }

// AgentProgram reports whether a process going by names is an AI agent.
func (p *Policy) AgentProgram(names []string) bool { return NameSet(p.AgentPrograms).Has(names) }

// UnixPeer reports whether names (a process's program names) are a
// program the tree may reach over a Unix socket or a FIFO.
func (p *Policy) UnixPeer(names []string) bool { return NameSet(p.UnixPeers).Has(names) }

// ProgramsAllowlisted reports whether the policy lists the programs
// allowed (AllowedPrograms): an allowlist policy.
func (p *Policy) ProgramsAllowlisted() bool { return len(p.AllowedPrograms) > 0 }

// AllowedProgram reports whether a process going by names is in
// AllowedPrograms.
func (p *Policy) AllowedProgram(names []string) bool { return NameSet(p.AllowedPrograms).Has(names) }

// PathsAllowlisted reports whether the policy lists the paths allowed
// (AllowedPaths): an allowlist policy.
func (p *Policy) PathsAllowlisted() bool { return len(p.AllowedPaths) > 0 }

// AllowedPath reports whether path is in AllowedPaths. A path in the
// workspace (cwd) or a home is matched in its relative form (Normalise:
// ./src/x.go, ~/.ssh/id_rsa) only, so that a workspace or home under /tmp
// is not allowed by /tmp/**; any other path as it is. The workspace and
// home directories themselves are always allowed.
func (p *Policy) AllowedPath(path, cwd, home string) bool {
	n := Normalise(path, cwd, home)
	if n == "." || n == "~" {
		return true // listing the workspace or the home is no access to speak of
	}
	if n != path {
		return p.allowedPaths.Has(n, "")
	}
	return p.allowedPaths.Has(path, home)
}
