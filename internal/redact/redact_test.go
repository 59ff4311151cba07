package redact

import (
	"slices"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// Fake credentials of each vendor's shape (none is real).
const (
	awsID     = "AKIAIOSFODNN7EXAMPLE"
	awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	ghToken   = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	ghFine    = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
	slackTok  = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp"
	openAI    = "sk-proj-Ab3dEf6hIj9kLmN0pQr5tUvWxYz12345"
	anthropic = "sk-ant-api03-AbCdEf0123456789_GhIjKlMnOpQrStUvWxYz-AbCdEfGhIjKl"
	googleKey = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
	googleTok = "ya29.a0AfH6SMBx1234567890abcdefghijklmnop"
	gitlab    = "glpat-AbCdEf0123456789xYzW"
	npmTok    = "npm_AbCdEf0123456789AbCdEf0123456789AbCd"
	hfTok     = "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
	stripe    = "sk_live_AbCdEf0123456789AbCd"
	jwt       = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)

// TestString: every secret masked, its name kept, the rest as it was.
func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Assignments: shell, environment, flags.
		{"ANTHROPIC_API_KEY=abc123 claude -p hi", "ANTHROPIC_API_KEY=[REDACTED] claude -p hi"},
		{"export GITHUB_TOKEN='s3cr3t value'; gh pr list", "export GITHUB_TOKEN='[REDACTED]'; gh pr list"},
		{`DB_PASSWORD="p@ss w0rd" ./migrate`, `DB_PASSWORD="[REDACTED]" ./migrate`},
		{"MY_SECRET=x1 AWS_SECRET_ACCESS_KEY=" + awsSecret + " aws s3 ls", "MY_SECRET=[REDACTED] AWS_SECRET_ACCESS_KEY=[REDACTED] aws s3 ls"},
		{"MYSQL_PWD=hunter2 mysql -u root", "MYSQL_PWD=[REDACTED] mysql -u root"},
		{"deploy --api-key=abc123 --region eu", "deploy --api-key=[REDACTED] --region eu"},
		{"login --password hunter2 --user bob", "login --password [REDACTED] --user bob"},
		{`login --token "a b c" next`, `login --token "[REDACTED]" next`},
		{"tool --client-secret s3cr3t", "tool --client-secret [REDACTED]"},
		{"npm publish --//127.0.0.1:4873/:_authToken=abcdef", "npm publish --//127.0.0.1:4873/:_authToken=[REDACTED]"},
		// INI, YAML and JSON.
		{"[default]\naws_access_key_id = " + awsID + "\naws_secret_access_key = " + awsSecret + "\n",
			"[default]\naws_access_key_id = [REDACTED]\naws_secret_access_key = [REDACTED]\n"},
		{"password: hunter2\nuser: bob", "password: [REDACTED]\nuser: bob"},
		{`{"api_key":"abc123","model":"x"}`, `{"api_key":"[REDACTED]","model":"x"}`},
		{`{"client_secret": "abc", "refresh_token": "def"}`, `{"client_secret": "[REDACTED]", "refresh_token": "[REDACTED]"}`},
		// Headers.
		{`curl -H "Authorization: Bearer abc.def" https://x`, `curl -H "Authorization: Bearer [REDACTED]" https://x`},
		{"Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED]"},
		{`curl -H 'X-Api-Key: abc123' -H 'Accept: json' u`, `curl -H 'X-Api-Key: [REDACTED]' -H 'Accept: json' u`},
		{`curl -H "PRIVATE-TOKEN: abc123" u`, `curl -H "PRIVATE-TOKEN: [REDACTED]" u`},
		{"Cookie: session=abc; theme=dark", "Cookie: [REDACTED]"},
		// URLs.
		{"git clone https://user:s3cr3t@github.com/o/r.git", "git clone https://user:[REDACTED]@github.com/o/r.git"},
		{"https://x-access-token:tok123@github.com/o/r", "https://x-access-token:[REDACTED]@github.com/o/r"},
		{"https://0123456789abcdef0123456789abcdef@host/p", "https://[REDACTED]@host/p"},
		{"postgres://app:pw@db:5432/app", "postgres://app:[REDACTED]@db:5432/app"},
		{"curl 'https://api.x.com/v1?access_token=abc&q=1'", "curl 'https://api.x.com/v1?access_token=[REDACTED]&q=1'"},
		{"https://maps.googleapis.com/x?key=abc123&sig=def456", "https://maps.googleapis.com/x?key=[REDACTED]&sig=[REDACTED]"},
		{"https://b.s3.amazonaws.com/o?X-Amz-Credential=AK%2F1&X-Amz-Signature=abcd", "https://b.s3.amazonaws.com/o?X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]"},
		// curl's user:password.
		{"curl -u admin:hunter2 https://x", "curl -u admin:[REDACTED] https://x"},
		// Shapes, anywhere.
		{"echo " + awsID, "echo [REDACTED]"},
		{"git push https://" + ghToken + "@github.com/o/r", "git push https://[REDACTED]@github.com/o/r"},
		{"token " + ghFine, "token [REDACTED]"},
		{"slack " + slackTok + " x", "slack [REDACTED] x"},
		{"key is " + openAI + ".", "key is [REDACTED]."},
		{"(" + anthropic + ")", "([REDACTED])"},
		{"g=" + googleKey, "g=[REDACTED]"},
		{"t " + googleTok, "t [REDACTED]"},
		{gitlab + " " + npmTok + " " + hfTok + " " + stripe, "[REDACTED] [REDACTED] [REDACTED] [REDACTED]"},
		{"jwt: " + jwt, "jwt: [REDACTED]"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n",
			"-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]-----END OPENSSH PRIVATE KEY-----\n"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow", "-----BEGIN RSA PRIVATE KEY-----[REDACTED]"},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestStringUnchanged: ordinary commands, paths, hashes and ids pass as
// they are (and without a copy).
func TestStringUnchanged(t *testing.T) {
	for _, s := range []string{
		"",
		"/home/user/.aws/credentials",
		"/tmp/polygraph-e2e-claude-1234567890/project/pgcall01/out.txt",
		"/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/root/.ssh/id_ed25519",
		"cat ~/.aws/credentials | head -1",
		"make test && go test ./... -run TestX -count=1",
		"sort --key=2 -t: /etc/passwd",
		"ssh-keygen -t ed25519 -f ~/.ssh/id_ed25519 -N ''",
		"curl --key /etc/ssl/private/client.key --cert client.pem https://x",
		"SSH_AUTH_SOCK=/run/user/1000/ssh-agent.sock",
		"SSH_KEY=/home/u/.ssh/id_rsa git fetch",
		"GITHUB_TOKEN=$GH_TOKEN gh pr list",
		"export OPENAI_API_KEY=${OPENAI_API_KEY:-}",
		"PWD=/home/u OLDPWD=/tmp",
		"docker login --password-stdin < pw.txt",
		"TOKEN_FILE=/run/secrets/token ./start",
		"git log --format=%H -1",
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"toolu_01XyZabcDEF1234567890ghiJKL",
		"call_AbCdEf0123456789AbCdEf01",
		"12345-987654321012",
		"python3 -m pip install scikit-learn==1.5.0",
		"ls /tmp/sk-learn-experiments/run-2024-final",
		"echo 'ssh://git@github.com/org/repo.git'",
		"git@github.com:org/repo.git",
		"http://127.0.0.1:4318/v1/traces",
		"if [ \"$MY_TOKEN\" = \"\" ]; then exit 1; fi",
		"max_tokens=1024 temperature=0.2",
		"ansible-playbook --ask-pass site.yml",
		"--no-auth https://example.com",
		"ENABLE_AUTH=true",
		"localhost:8080 token:9090",
		"a == b",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		"bash -c 'source /root/.claude/shell-snapshots/snapshot-bash-1.sh && eval \"mkdir x\"'",
	} {
		if got := String(s); got != s {
			t.Errorf("String(%q) = %q, want it unchanged", s, got)
		}
	}
}

// TestArgv masks the argument after a flag that takes a secret, and each
// argument as String does.
func TestArgv(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"mysql", "--password", "hunter2", "db"}, []string{"mysql", "--password", Mask, "db"}},
		{[]string{"gh", "--token", "abc", "--repo", "o/r"}, []string{"gh", "--token", Mask, "--repo", "o/r"}},
		{[]string{"tool", "--api-key", "abc", "-v"}, []string{"tool", "--api-key", Mask, "-v"}},
		{[]string{"tool", "--password", "/looks/like/a/path"}, []string{"tool", "--password", Mask}},
		{[]string{"curl", "-u", "admin:pw", "https://x"}, []string{"curl", "-u", "admin:" + Mask, "https://x"}},
		{[]string{"curl", "-H", "Authorization: Bearer abc", "https://x"}, []string{"curl", "-H", "Authorization: Bearer " + Mask, "https://x"}},
		{[]string{"env", "OPENAI_API_KEY=abc", "codex"}, []string{"env", "OPENAI_API_KEY=" + Mask, "codex"}},
		{[]string{"bash", "-c", "X_TOKEN=abc ./run"}, []string{"bash", "-c", "X_TOKEN=" + Mask + " ./run"}},
		{[]string{"echo", awsID}, []string{"echo", Mask}},
	} {
		if got := Argv(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Argv(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	plain := []string{"ps", "-u", "root", "--sort", "pid"}
	if got := Argv(plain); &got[0] != &plain[0] {
		t.Errorf("Argv copied an argv it did not change")
	}
	in := []string{"x", "--token", "abc"}
	Argv(in)
	if in[2] != "abc" {
		t.Errorf("Argv changed its argument")
	}
	if got := Argv([]string{"docker", "run", "-u", "1000:1000", "img"}); got[3] != "1000:1000" {
		t.Errorf("-u outside curl masked: %q", got)
	}
	if got := Argv([]string{"curl", "--key", "/etc/ssl/k.pem", "u"}); got[2] != "/etc/ssl/k.pem" {
		t.Errorf("a key file's path masked: %q", got)
	}
}

// TestEnv masks by name and shape, and keeps paths and ordinary values.
func TestEnv(t *testing.T) {
	in := []string{"HOME=/root", "ANTHROPIC_API_KEY=sk-ant-x", "GEMINI_API_KEY=x", "PATH=/usr/bin:/bin",
		"AWS_ACCESS_KEY_ID=" + awsID, "HTTPS_PROXY=http://u:pw@proxy:3128", "PWD=/tmp", "GH_TOKEN=",
		"SSH_AUTH_SOCK=/tmp/agent.1", "NPM_CONFIG__AUTH=dXNlcjpwYXNz"}
	want := []string{"HOME=/root", "ANTHROPIC_API_KEY=" + Mask, "GEMINI_API_KEY=" + Mask, "PATH=/usr/bin:/bin",
		"AWS_ACCESS_KEY_ID=" + Mask, "HTTPS_PROXY=http://u:" + Mask + "@proxy:3128", "PWD=/tmp", "GH_TOKEN=",
		"SSH_AUTH_SOCK=/tmp/agent.1", "NPM_CONFIG__AUTH=" + Mask}
	if got := Env(in); !slices.Equal(got, want) {
		t.Errorf("Env:\n got %q\nwant %q", got, want)
	}
}

// TestHeader masks credential headers whole (Authorization but its scheme).
func TestHeader(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"Authorization", "Bearer abc", "Bearer " + Mask},
		{"authorization", "abc", Mask},
		{"X-Api-Key", "abc", Mask},
		{"x-goog-api-key", "abc", Mask},
		{"Cookie", "a=b", Mask},
		{"Content-Type", "application/json", "application/json"},
		{"X-Forwarded-For", "10.0.0.1", "10.0.0.1"},
		{"Referer", "https://u:pw@x/", "https://u:" + Mask + "@x/"},
	} {
		if got := Header(tc.name, tc.value); got != tc.want {
			t.Errorf("Header(%q, %q) = %q, want %q", tc.name, tc.value, got, tc.want)
		}
	}
}

// TestSecretName pins which names hold secrets.
func TestSecretName(t *testing.T) {
	yes := []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "MYSQL_PWD", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "api-key", "apiKey", "APIKEY", "x-api-key", "_authToken", "client_secret", "PRIVATE-TOKEN",
		"passphrase", "GPG_KEY", "SECRET", "TOKEN", "password", "NPM_AUTH", "credentials"}
	no := []string{"PWD", "OLDPWD", "KEY", "PUBLIC_KEY", "sort-key", "SSH_AUTH_SOCK", "TOKEN_FILE", "max_tokens", "HOME",
		"PATH", "AWS_ACCESS_KEY_ID", "no-auth", "ask-pass", "password-stdin", "bypass", "keyboard", "TOKENIZERS_PARALLELISM"}
	for _, n := range yes {
		if !SecretName(n) {
			t.Errorf("SecretName(%q) = false, want true", n)
		}
	}
	for _, n := range no {
		if SecretName(n) {
			t.Errorf("SecretName(%q) = true, want false", n)
		}
	}
}

// TestIdempotent: masking masked text changes nothing.
func TestIdempotent(t *testing.T) {
	for _, s := range []string{"A_TOKEN=x " + ghToken, "curl -u a:b -H 'Authorization: Bearer c' https://u:p@h/?token=t"} {
		once := String(s)
		if twice := String(once); twice != once {
			t.Errorf("String(String(%q)) = %q, want %q", s, twice, once)
		}
		if strings.Count(once, Mask) == 0 {
			t.Errorf("String(%q) masked nothing", s)
		}
	}
}

func BenchmarkStringPath(b *testing.B) {
	s := "/tmp/polygraph-e2e-claude-1234567890/project/node_modules/.pnpm/lodash@4.17.21/node_modules/lodash/lodash.js"
	b.ReportAllocs()
	for b.Loop() {
		String(s)
	}
}

func BenchmarkStringCommand(b *testing.B) {
	s := "bash -c source /root/.claude/shell-snapshots/snapshot-bash-1764.sh && eval 'make test && ./run --token abc123 --verbose' < /dev/null && pwd -P >| /tmp/claude-1a2b-cwd"
	b.ReportAllocs()
	for b.Loop() {
		String(s)
	}
}

// TestStringFlagFirst: a flag at the start of the string counts.
func TestStringFlagFirst(t *testing.T) {
	if got := String("--password hunter2"); got != "--password "+Mask {
		t.Errorf("got %q", got)
	}
}

// TestStringQuotedScript: a flag inside a quoted script counts.
func TestStringQuotedScript(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`bash -c 'deploy --token abc123 --verbose'`, `bash -c 'deploy --token [REDACTED] --verbose'`},
		{`eval "login --password 'p w' && ls"`, `eval "login --password '[REDACTED]' && ls"`},
		{`sh -c "curl -u bob:pw https://x"`, `sh -c "curl -u bob:[REDACTED] https://x"`},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestEvent: an exec's command line and environment are masked in a
// copy; the recorded event, and an event with nothing to mask, are left
// as they are.
func TestEvent(t *testing.T) {
	e := &event.Event{Kind: event.KindExec, Process: &event.Process{
		Argv: []string{"curl", "-H", "Authorization: Bearer " + ghToken, "https://x.test/"},
		Env:  []string{"CODEX_HOME=/home/dev/.codex", "OPENAI_API_KEY=" + openAI}}}
	got := Event(e)
	if got == e || strings.Contains(strings.Join(got.Argv(), " "), ghToken) || slices.Contains(got.Process.Env, "OPENAI_API_KEY="+openAI) {
		t.Errorf("Event did not mask: %q %q", got.Argv(), got.Process.Env)
	}
	if got.Process.Env[0] != "CODEX_HOME=/home/dev/.codex" || got.Argv()[0] != "curl" {
		t.Errorf("Event masked what is no secret: %q %q", got.Argv(), got.Process.Env)
	}
	if !strings.Contains(e.Argv()[2], ghToken) || e.Process.Env[1] != "OPENAI_API_KEY="+openAI {
		t.Error("Event changed the recorded event")
	}
	plain := &event.Event{Kind: event.KindExec, Process: &event.Process{Argv: []string{"make", "test"}}}
	if Event(plain) != plain || Event(&event.Event{Kind: event.KindOpen, Path: "/p"}) == nil {
		t.Error("Event copied an event with nothing to mask")
	}
}
