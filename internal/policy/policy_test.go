package policy

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDefaultCompiles(t *testing.T) {
	p := Default()
	if p.Source != "built-in" {
		t.Errorf("Source = %q", p.Source)
	}
	ids := RuleIDs()
	if len(ids) == 0 {
		t.Fatal("no rules registered")
	}
	for _, id := range ids {
		if !p.Enabled(id) {
			t.Errorf("rule %s is off by default", id)
		}
	}
}

func TestAllowEgress(t *testing.T) {
	p := Default()
	if err := p.Allow("10.1.0.0/16:5432"); err != nil {
		t.Fatal(err)
	}
	if err := p.Allow("[::1]:8443"); err != nil {
		t.Fatal(err)
	}
	if err := p.Allow("127.0.0.1:4000"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, addr string
		port       uint16
		want       bool
	}{
		{"api.anthropic.com", "160.79.104.10", 443, true},
		{"API.Anthropic.com.", "160.79.104.10", 443, true},
		{"api.anthropic.com", "160.79.104.10", 80, false}, // the entry has a port
		{"", "160.79.104.10", 443, false},                 // a name entry needs the name
		{"evil.example", "203.0.113.9", 443, false},
		{"us-central1-aiplatform.googleapis.com", "142.250.1.1", 443, true},
		{"bedrock-runtime.us-east-1.amazonaws.com", "3.3.3.3", 443, true},
		{"registry.npmjs.org", "104.16.0.1", 443, true}, // registries are allowed
		{"proxy.golang.org", "142.250.1.1", 443, true},
		{"", "127.0.0.1", 8080, false}, // loopback is not blanket-allowed
		{"", "127.0.0.1", 4000, true},
		{"", "::ffff:127.0.0.1", 4000, true}, // v4-mapped
		{"", "::1", 8443, true},
		{"", "::1", 8444, false},
		{"", "10.1.200.3", 5432, true},
		{"", "10.2.0.1", 5432, false},
		{"", "8.8.8.8", 53, false}, // DNS only to the resolvers (AllowDNS)
	}
	for _, tt := range tests {
		if got := p.AllowEgress(tt.host, tt.addr, tt.port); got != tt.want {
			t.Errorf("AllowEgress(%q, %q, %d) = %v, want %v", tt.host, tt.addr, tt.port, got, tt.want)
		}
	}
}

func TestAllowAgentEndpoints(t *testing.T) {
	p := Default()
	added := p.AllowAgentEndpoints([]string{"HOME=/x", "ANTHROPIC_BASE_URL=http://127.0.0.1:41234", "OPENAI_BASE_URL=https://gw.corp.example/v1"})
	if len(added) != 2 {
		t.Fatalf("added %v", added)
	}
	if !p.AllowEgress("", "127.0.0.1", 41234) || p.AllowEgress("", "127.0.0.1", 41235) {
		t.Error("the configured loopback endpoint is not exactly what is allowed")
	}
	if !p.AllowEgress("gw.corp.example", "198.51.100.1", 443) {
		t.Error("https endpoint without a port: want 443 allowed")
	}
}

func TestBadEgressEntries(t *testing.T) {
	for _, e := range []string{"", "[::1", "[::1]x", "host:notaport", "host:0", "bad host", "a/b"} {
		if _, err := parseHostRule(e); err == nil {
			t.Errorf("parseHostRule(%q) accepted", e)
		}
	}
}

func TestPathSets(t *testing.T) {
	p := Default()
	home := "/tmp/e2e/home"
	tests := []struct {
		set  func(string, string) (PathRule, bool)
		path string
		want bool
		sev  string
	}{
		{p.Sensitive, "/home/dev/.aws/credentials", true, ""},
		{p.Sensitive, "/root/.ssh/id_ed25519", true, ""},
		{p.Sensitive, home + "/.ssh/id_rsa", true, ""},
		{p.Sensitive, "/home/dev/.ssh/known_hosts", false, ""},
		{p.Sensitive, "/home/dev/.ssh/id_rsa.pub", false, ""},
		{p.Sensitive, "/home/dev/.ssh/config", true, "low"},
		{p.Sensitive, "/home/dev/.ssh", false, ""}, // listing the directory is not reading a key
		{p.Sensitive, "/srv/app/.env", true, "medium"},
		{p.Sensitive, "/srv/app/.env.production", true, "medium"},
		{p.Sensitive, "/srv/app/.env.example", false, ""},
		{p.Sensitive, "/home/dev/.config/google-chrome/Default/Cookies", true, ""},
		{p.Sensitive, "/home/dev/.mozilla/firefox/abc.default-release/logins.json", true, ""},
		{p.Sensitive, "/home/dev/.config/gcloud/application_default_credentials.json", true, ""},
		{p.Sensitive, "/home/dev/project/main.go", false, ""},
		{p.AgentConfig, "/home/dev/.codex/auth.json", true, ""},
		{p.AgentConfig, "/home/dev/.codex/config.toml", true, "medium"},
		{p.AgentConfig, "/home/dev/.claude/shell-snapshots/snapshot-bash-1.sh", false, ""},
		{p.AgentConfig, "/home/dev/.claude.json", true, ""},
		{p.AgentConfig, home + "/.gemini/oauth_creds.json", true, ""},
		{p.Tamper, "/home/dev/.claude/settings.json", true, "high"},
		{p.Tamper, "/home/dev/proj/.claude/settings.local.json", true, "medium"},
		{p.Tamper, home + "/.codex/config.toml", true, "high"},
		{p.Tamper, "/home/dev/proj/.gemini/settings.json", true, "medium"},
		{p.Tamper, "/home/dev/proj/settings.json", false, ""},
	}
	for _, tt := range tests {
		r, ok := tt.set(tt.path, home)
		if ok != tt.want || ok && r.Severity != tt.sev {
			t.Errorf("%s: match %v severity %q, want %v %q", tt.path, ok, r.Severity, tt.want, tt.sev)
		}
	}
	if !p.Noise("/home/dev/.cache/go-build/ab/x", "") || !p.Noise("/w/node_modules/x/index.js", "") || p.Noise("/w/main.go", "") {
		t.Error("noise paths")
	}
	if !p.TestFile("/w/pkg/x_test.go", "") || !p.TestFile("/w/tests/test_app.py", "") || p.TestFile("/w/app.py", "") {
		t.Error("test files")
	}
	if !p.Artifact("/w/dist/pkg-1.0.0.tgz", "") || p.Artifact("/home/u/.cache/pip/wheels/a.whl", "") {
		t.Error("artifacts")
	}
}

// TestGlobLiterals holds the literal checks in front of every path
// pattern's regexp to the regexp: on paths built from the patterns
// themselves (wildcards filled in every way, under every home form) and
// near misses, both must answer alike.
func TestGlobLiterals(t *testing.T) {
	var globs []string
	for _, l := range [][]PathRule{DefaultSensitivePaths, DefaultAgentConfigPaths, DefaultTamperPaths} {
		for _, r := range l {
			globs = append(globs, strings.TrimPrefix(r.Path, "!"))
		}
	}
	for _, l := range [][]string{DefaultNoisePaths, DefaultTestFiles, DefaultArtifacts} {
		for _, g := range l {
			globs = append(globs, strings.TrimPrefix(g, "!"))
		}
	}
	globs = append(globs, "a/**/b", "/x/**", "?", "**", "*", "/é/*.t", "~/.ü?/**", "f*é", "/exact/ü", "**/a*bc*d/**", "x*yz?é*w")
	seen := map[string]bool{}
	var paths []string
	for _, g := range globs {
		for _, f := range []string{"", "x", "a/b", "\xff"} {
			p := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(g, "**", f), "*", f), "?", f)
			for _, pre := range []string{"", "/home/u/", "~/"} {
				q := pre + strings.TrimPrefix(p, "~/")
				for _, v := range []string{q, q + "x", "x" + q, q[:len(q)/2]} {
					if !seen[v] {
						seen[v] = true
						paths = append(paths, v)
					}
				}
			}
		}
	}
	for _, g := range globs {
		pp, err := compileGlob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if got, want := pp.match(p), pp.re.MatchString(p); got != want {
				t.Errorf("glob %q (prefix %q suffix %q inner %q exact %v) on %q: %v, the regexp says %v", g, pp.prefix, pp.suffix, pp.inner, pp.exact, p, got, want)
			}
		}
	}
}

func TestCommands(t *testing.T) {
	p := Default()
	tests := []struct {
		match func([]string) (string, bool)
		argv  []string
		want  string
	}{
		{p.TestRunner, []string{"/usr/local/go/bin/go", "test", "./..."}, "go test"},
		{p.TestRunner, []string{"go", "build"}, ""},
		{p.TestRunner, []string{"python3.12", "-m", "pytest", "-q"}, "python -m pytest"},
		{p.TestRunner, []string{"/usr/bin/python3", "/usr/local/bin/pytest"}, "pytest"},
		{p.TestRunner, []string{"node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "test"}, "npm test"},
		{p.TestRunner, []string{"npm", "run", "test:unit"}, "npm run test*"},
		{p.TestRunner, []string{"node", "/w/node_modules/.bin/jest", "--ci"}, "jest"},
		{p.TestRunner, []string{"make", "check"}, "make check"},
		{p.TestRunner, []string{"bash", "-c", "go test ./..."}, ""}, // the shell is not the runner; its child is
		{p.PackageManager, []string{"pip3", "install", "requests"}, "pip install"},
		{p.PackageManager, []string{"python3", "-m", "pip", "install", "-r", "req.txt"}, "python -m pip install"},
		{p.PackageManager, []string{"npm", "ci"}, "npm ci"},
		{p.PackageManager, []string{"go", "get", "golang.org/x/sys"}, "go get"},
		{p.PackageManager, []string{"npm", "test"}, ""},
		{p.Publish, []string{"gem", "push", "x-1.0.gem"}, "gem push"},
		{p.Publish, []string{"python", "-m", "twine", "upload", "dist/*"}, "python -m twine upload"},
		{p.Publish, []string{"npm", "publish"}, "npm publish"},
	}
	for _, tt := range tests {
		got, _ := tt.match(tt.argv)
		if got != tt.want {
			t.Errorf("%q matched %q, want %q", tt.argv, got, tt.want)
		}
	}
	q, err := Parse([]byte("test_runners: [python3.11 -m nose, /opt/bin/mytest]\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := q.TestRunner([]string{"/usr/bin/python3", "-m", "nose"}); !ok {
		t.Error("a versioned program name in a pattern should match any version")
	}
	if _, ok := q.TestRunner([]string{"/usr/local/bin/mytest", "-v"}); !ok {
		t.Error("a path in a pattern's first word should match by program name")
	}
	if !p.BuildTool(ProgramNames("/usr/local/go/pkg/tool/linux_amd64/link", []string{"link", "-o", "x"})) {
		t.Error("the Go linker is a build tool")
	}
	if p.BuildTool(ProgramNames("/usr/bin/curl", []string{"curl", "-o", "x"})) {
		t.Error("curl is not a build tool")
	}
}

// TestCommandIndex holds CommandSet.Match, which tries only the patterns
// that can match a command's program, to trying every pattern in order
// with path.Match, on command lines built from the patterns themselves.
func TestCommandIndex(t *testing.T) {
	lists := [][]string{DefaultTestRunners, DefaultPackageManagers, DefaultPublishCommands,
		{"n?de x", "[gm]ake t*", "g\\o test", "go test", "go *", "*"}}
	for _, list := range lists {
		s, err := compileCommands(list)
		if err != nil {
			t.Fatal(err)
		}
		naive := func(argv []string) (string, bool) {
			for _, cand := range CommandForms(argv) {
				for i, p := range s.patterns {
					ok := len(cand) >= len(p)
					for j := 0; ok && j < len(p); j++ {
						ok, _ = path.Match(p[j], cand[j])
					}
					if ok {
						return s.src[i], true
					}
				}
			}
			return "", false
		}
		var argvs [][]string
		for _, p := range list {
			w := strings.Fields(strings.NewReplacer("*", "x", "?", "y", "[gm]", "g").Replace(p))
			argvs = append(argvs, w, append(w, "-v"), w[:1], append([]string{"/usr/bin/" + w[0] + "3"}, w[1:]...),
				append([]string{"node", "/x/" + w[0] + "-cli.js"}, w[1:]...), append([]string{"python3", "-m"}, w...))
		}
		for _, argv := range argvs {
			got, gok := s.Match(argv)
			want, wok := naive(argv)
			if got != want || gok != wok {
				t.Errorf("%q: Match %q %v, in order %q %v", argv, got, gok, want, wok)
			}
		}
	}
}

func TestScriptArg(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/sh", "/tmp/x.sh"}, "/tmp/x.sh"},
		{[]string{"python3", "-u", "gen.py", "--flag"}, "gen.py"},
		{[]string{"python3", "-m", "pytest"}, ""},
		{[]string{"bash", "-c", "./x.sh"}, ""},
		{[]string{"node"}, ""},
		{[]string{"/usr/bin/ls", "x.sh"}, ""},
	}
	for _, tt := range tests {
		if got := ScriptArg(tt.argv); got != tt.want {
			t.Errorf("ScriptArg(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	data := `
version: 1
rules:
  claim-edit-mismatch: {enabled: false}
  sensitive-read:
    severity: critical
egress:
  allow:
    - 127.0.0.1:8080
    - "[::1]:8080"
    - internal.example.com
registries:
  - npm.corp.example:443
sensitive_paths:
  - ~/.config/acme/token
  - path: ~/.npmrc
    severity: low
thresholds:
  publish_count: 5
  test_min_duration: 1s
`
	p, err := Parse([]byte(data), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != "p.yaml" || p.Enabled("claim-edit-mismatch") || !p.Enabled("sensitive-read") {
		t.Errorf("rules: %+v", p.Rules)
	}
	if p.SeverityOverride("sensitive-read") != "critical" {
		t.Errorf("severity override: %q", p.SeverityOverride("sensitive-read"))
	}
	if !p.AllowEgress("", "127.0.0.1", 8080) || !p.AllowEgress("internal.example.com", "10.0.0.1", 22) {
		t.Error("file egress entries not applied")
	}
	if !p.AllowEgress("api.anthropic.com", "1.2.3.4", 443) {
		t.Error("defaults: true is the default; built-in entries should stay")
	}
	if !p.IsRegistry("npm.corp.example", "10.0.0.2", 443) || !p.IsRegistry("pypi.org", "1.1.1.1", 443) {
		t.Error("registries not extended")
	}
	if r, ok := p.Sensitive("/home/u/.config/acme/token", ""); !ok || r.Severity != "" {
		t.Error("added sensitive path")
	}
	if r, _ := p.Sensitive("/home/u/.npmrc", ""); r.Severity != "low" {
		t.Errorf("the file's entry should win over the built-in one: %+v", r)
	}
	if p.Thresholds.PublishCount != 5 || p.Thresholds.TestMinDuration != time.Second || p.Thresholds.Artifacts != DefaultThresholds.Artifacts {
		t.Errorf("thresholds %+v", p.Thresholds)
	}

	p, err = Parse([]byte("defaults: false\negress:\n  allow: [10.0.0.0/8]\n"), "strict.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.AllowEgress("api.anthropic.com", "1.2.3.4", 443) || !p.AllowEgress("", "10.9.9.9", 443) {
		t.Error("defaults: false should drop the built-in allowlist")
	}
	if _, ok := p.Sensitive("/root/.aws/credentials", ""); ok {
		t.Error("defaults: false should drop the built-in sensitive paths")
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		data string
		is   error
		want string
	}{
		{"egres:\n  allow: []\n", ErrUnknownKey, `p.yaml:1: unknown key "egres" at the top level (known: version`},
		{"egress:\n  alow: [x]\n", ErrUnknownKey, `p.yaml:2: unknown key "alow" in egress (known: allow, dns)`},
		{"rules:\n  sensitive-read:\n    enable: false\n", ErrUnknownKey, `p.yaml:3: unknown key "enable" in rules.sensitive-read`},
		{"sensitive_paths:\n  - path: x\n    client: [y]\n", ErrUnknownKey, `p.yaml:3: unknown key "client" in sensitive_paths`},
		{"thresholds:\n  publish: 3\n", ErrUnknownKey, `p.yaml:2: unknown key "publish" in thresholds`},
		{"rules:\n  no-such-rule: {enabled: false}\n", ErrUnknownRule, `p.yaml:2: unknown rule "no-such-rule"`},
		{"rules:\n  sensitive-read: {severity: severe}\n", ErrBadSeverity, `p.yaml:2: rule sensitive-read: bad severity "severe"`},
		{"egress:\n  allow: ['host:x']\n", nil, `p.yaml:2: egress.allow: egress entry "host:x": bad port "x"`},
		{"thresholds:\n  test_min_duration: soon\n", nil, "p.yaml:2: "},
		{"version: 2\n", nil, "p.yaml:1: version 2 is not supported"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.data), "p.yaml")
		if err == nil {
			t.Errorf("%q: no error", tt.data)
			continue
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%q: error %v is not %v", tt.data, err, tt.is)
		}
		if !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %q, want one line starting %q", tt.data, err, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(f, []byte(`{"rules": {"fileless-exec": {"enabled": false}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if p.Enabled("fileless-exec") {
		t.Error("JSON policy not applied")
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file: no error")
	}
}

// TestExampleLoads keeps the example in docs/policy.md valid.
func TestExampleLoads(t *testing.T) {
	doc, err := os.ReadFile("../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	if !ok {
		t.Fatal("docs/policy.md has no ```yaml example")
	}
	example, _, _ := strings.Cut(rest, "```")
	if _, err := Parse([]byte(example), "docs/policy.md"); err != nil {
		t.Fatal(err)
	}
}

func TestAllowDNS(t *testing.T) {
	p := Default()
	tests := []struct {
		addr      string
		resolvers []string
		want      bool
	}{
		{"127.0.0.53", nil, true},
		{"::ffff:127.0.0.1", nil, true},
		{"10.0.0.2", []string{"10.0.0.2"}, true},
		{"8.8.8.8", []string{"10.0.0.2"}, false},
		{"203.0.113.5", nil, false},
	}
	for _, tt := range tests {
		if got := p.AllowDNS(tt.addr, tt.resolvers); got != tt.want {
			t.Errorf("AllowDNS(%q, %v) = %v, want %v", tt.addr, tt.resolvers, got, tt.want)
		}
	}
	off := Default()
	off.Egress.DNS = ptr(false)
	if off.AllowDNS("127.0.0.53", nil) {
		t.Error("egress.dns false still allows the stub resolver")
	}
}

func TestFootholdPaths(t *testing.T) {
	p := Default()
	for _, tt := range []struct {
		path          string
		persist, priv bool
	}{
		{"/home/dev/.ssh/authorized_keys", true, false},
		{"/root/.bashrc", true, false},
		{"/srv/ci/.zshrc", false, false}, // no home
		{"/etc/cron.d/job", true, false},
		{"/var/spool/cron/crontabs/root", true, false},
		{"/home/dev/.config/systemd/user/x.service", true, false},
		{"/work/repo/.git/hooks/pre-commit", true, false},
		{"/work/repo/.git/hooks/pre-commit.sample", false, false},
		{"/etc/ld.so.preload", true, false},
		{"/etc/sudoers.d/agent", false, true},
		{"/etc/passwd", false, true},
		{"/etc/pam.d/sshd", false, true},
		{"/etc/hosts", false, false},
	} {
		if _, ok := p.Persistence(tt.path, "/home/dev"); ok != tt.persist {
			t.Errorf("Persistence(%q) = %v", tt.path, ok)
		}
		if _, ok := p.Privilege(tt.path, "/home/dev"); ok != tt.priv {
			t.Errorf("Privilege(%q) = %v", tt.path, ok)
		}
	}
}

func TestKillSection(t *testing.T) {
	p, err := Parse([]byte("kill:\n  exec: [/usr/bin/nc]\n  write: [~/.bashrc, /etc/sudoers.d]\nexec_gate: true\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Kill.Exec, []string{"/usr/bin/nc"}) || !slices.Equal(p.Kill.Write, []string{"~/.bashrc", "/etc/sudoers.d"}) || !p.ExecGate {
		t.Errorf("kill %+v gate %v", p.Kill, p.ExecGate)
	}
	if d := Default(); len(d.Kill.Exec)+len(d.Kill.Write) != 0 || d.ExecGate {
		t.Errorf("the built-in policy kills nothing and gates nothing: %+v %v", d.Kill, d.ExecGate)
	}
	for _, bad := range []string{"kill:\n  exec: [nc]\n", "kill:\n  write: [~/.config/*/rc]\n", "kill:\n  sig: [x]\n"} {
		if _, err := Parse([]byte(bad), "p.yaml"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
