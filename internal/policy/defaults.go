package policy

import (
	"slices"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
)

// The built-in lists. A policy file extends them unless it says
// `defaults: false`. docs/policy.md describes each.

// DefaultModelAPIs are the model vendors' API, sign-in and telemetry hosts
// the agents polygraph knows talk to: the hosts their profiles mark for
// the egress allowlist, on port 443.
var DefaultModelAPIs = agent.EgressHosts()

// DefaultRegistries are the package registries and mirrors package managers
// are expected to reach.
var DefaultRegistries = []string{
	"registry.npmjs.org", "registry.yarnpkg.com", "nodejs.org",
	"pypi.org", "files.pythonhosted.org",
	"proxy.golang.org", "sum.golang.org",
	"crates.io", "static.crates.io", "index.crates.io",
	"rubygems.org", "index.rubygems.org",
	"repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "services.gradle.org",
	"api.nuget.org", "repo.hex.pm", "hex.pm", "repo.packagist.org", "packagist.org",
	"conda.anaconda.org", "repo.anaconda.com",
	"deb.debian.org", "security.debian.org", "archive.ubuntu.com", "security.ubuntu.com",
	"dl-cdn.alpinelinux.org",
	"registry-1.docker.io", "auth.docker.io", "production.cloudflare.docker.com",
}

// DefaultPublishHosts receive uploads only: they count toward mass-publish
// but are not where installs go, so they are not in the egress allowlist.
var DefaultPublishHosts = []string{"upload.pypi.org", "test.pypi.org"}

var (
	// sshClients read ssh's files themselves. git and rsync reach a
	// remote through ssh, which reads the keys: git itself reading one
	// (git diff --no-index /dev/null ~/.ssh/id_rsa) is no client's read.
	sshClients    = []string{"ssh", "scp", "sftp", "ssh-add", "ssh-agent", "ssh-keygen"}
	npmClients    = []string{"npm", "npx", "pnpm", "pnpx", "yarn", "bun"}
	chromeClients = []string{"chrome", "google-chrome*", "chromium*", "brave*", "msedge", "microsoft-edge*"}
	pgClients     = []string{"psql", "pg_dump", "pg_dumpall", "pg_restore", "pgcli", "createdb", "dropdb"}
	mysqlClients  = []string{"mysql", "mysqldump", "mariadb", "mariadb-dump", "mycli"}
)

// DefaultSensitivePaths are credential stores. Own clients (npm reading
// ~/.npmrc) are reported at info.
var DefaultSensitivePaths = []PathRule{
	{Path: "!~/.ssh/known_hosts*"},
	{Path: "!~/.ssh/*.pub"},
	{Path: "!~/.ssh/authorized_keys*"},
	{Path: "~/.ssh/config", Clients: append(slices.Clone(sshClients), "git", "rsync"), Severity: "low"},
	{Path: "~/.ssh/**", Clients: sshClients},
	{Path: "~/.aws/credentials", Clients: []string{"aws", "aws_completer", "terraform", "pulumi"}},
	{Path: "~/.aws/config", Clients: []string{"aws", "aws_completer", "terraform", "pulumi"}, Severity: "medium"},
	{Path: "~/.aws/sso/cache/**", Clients: []string{"aws"}},
	{Path: "~/.docker/config.json", Clients: []string{"docker", "docker-credential-*", "podman", "buildah", "skopeo"}},
	{Path: "~/.netrc", Clients: []string{"curl", "git", "git-remote-http*", "wget", "ftp", "pip", "uv"}},
	{Path: "~/.git-credentials", Clients: []string{"git", "git-credential-store", "git-remote-http*"}},
	{Path: "~/.config/git/credentials", Clients: []string{"git", "git-credential-store", "git-remote-http*"}},
	{Path: "~/.kube/config", Clients: []string{"kubectl", "helm", "k9s", "kubectx", "kubens", "minikube", "kind"}},
	{Path: "~/.config/gcloud/**", Clients: []string{"gcloud", "gsutil", "bq", "docker-credential-gcloud"}},
	{Path: "~/.azure/**", Clients: []string{"az"}},
	{Path: "~/.npmrc", Clients: npmClients},
	{Path: "~/.config/npm/npmrc", Clients: npmClients},
	{Path: "~/.yarnrc.yml", Clients: npmClients, Severity: "medium"},
	{Path: "~/.pypirc", Clients: []string{"twine", "poetry", "flit", "hatch", "uv", "pip"}},
	{Path: "~/.gem/credentials", Clients: []string{"gem"}},
	{Path: "~/.local/share/gem/credentials", Clients: []string{"gem"}},
	{Path: "~/.cargo/credentials", Clients: []string{"cargo"}},
	{Path: "~/.cargo/credentials.toml", Clients: []string{"cargo"}},
	{Path: "~/.config/gh/hosts.yml", Clients: []string{"gh", "git-credential-gh"}},
	{Path: "~/.terraform.d/credentials.tfrc.json", Clients: []string{"terraform", "tofu"}},
	{Path: "~/.vault-token", Clients: []string{"vault"}},
	{Path: "~/.gnupg/private-keys-v1.d/**", Clients: []string{"gpg", "gpg2", "gpg-agent", "gpgsm"}},
	{Path: "~/.gnupg/secring.gpg", Clients: []string{"gpg", "gpg2", "gpg-agent"}},
	{Path: "~/.password-store/**", Clients: []string{"pass", "gpg", "gpg2"}},
	{Path: "~/.local/share/keyrings/**", Clients: []string{"gnome-keyring-daemon", "secret-tool"}},
	{Path: "~/.mozilla/firefox/**/cookies.sqlite", Clients: []string{"firefox*"}},
	{Path: "~/.mozilla/firefox/**/logins.json", Clients: []string{"firefox*"}},
	{Path: "~/.mozilla/firefox/**/key4.db", Clients: []string{"firefox*"}},
	{Path: "~/.config/google-chrome/**/Cookies", Clients: chromeClients},
	{Path: "~/.config/google-chrome/**/Login Data", Clients: chromeClients},
	{Path: "~/.config/google-chrome/Local State", Clients: chromeClients},
	{Path: "~/.config/chromium/**/Cookies", Clients: chromeClients},
	{Path: "~/.config/chromium/**/Login Data", Clients: chromeClients},
	{Path: "~/.config/chromium/Local State", Clients: chromeClients},
	{Path: "~/.config/BraveSoftware/**/Cookies", Clients: chromeClients},
	{Path: "~/.config/BraveSoftware/**/Login Data", Clients: chromeClients},
	{Path: "~/.config/microsoft-edge/**/Cookies", Clients: chromeClients},
	{Path: "~/.config/microsoft-edge/**/Login Data", Clients: chromeClients},
	// Database clients.
	{Path: "~/.pgpass", Clients: pgClients},
	{Path: "~/.my.cnf", Clients: mysqlClients},
	{Path: "~/.mylogin.cnf", Clients: mysqlClients},
	{Path: "~/.config/pgcli/config", Clients: []string{"pgcli"}, Severity: "medium"},
	// Cloud command lines.
	{Path: "~/.oci/config", Clients: []string{"oci"}},
	{Path: "~/.oci/**", Clients: []string{"oci"}},
	{Path: "~/.config/doctl/config.yaml", Clients: []string{"doctl"}},
	{Path: "~/.fly/config.yml", Clients: []string{"fly", "flyctl"}},
	{Path: "~/.config/hcloud/cli.toml", Clients: []string{"hcloud"}},
	{Path: "~/.config/scw/config.yaml", Clients: []string{"scw"}},
	{Path: "~/.aliyun/config.json", Clients: []string{"aliyun"}},
	{Path: "~/.s3cfg", Clients: []string{"s3cmd"}},
	{Path: "~/.boto", Clients: []string{"gsutil", "boto"}},
	{Path: "~/.config/glab-cli/config.yml", Clients: []string{"glab"}},
	{Path: "~/.config/hub", Clients: []string{"hub"}},
	{Path: "~/.terraformrc", Clients: []string{"terraform", "tofu"}},
	{Path: "~/.config/op/**", Clients: []string{"op"}},
	{Path: "~/.config/age/keys.txt", Clients: []string{"age", "sops"}},
	// Package registries' tokens.
	{Path: "~/.m2/settings.xml", Clients: []string{"mvn", "mvnw", "java"}, Severity: "medium"},
	{Path: "~/.m2/settings-security.xml", Clients: []string{"mvn", "mvnw", "java"}},
	{Path: "~/.gradle/gradle.properties", Clients: []string{"gradle", "gradlew", "java"}, Severity: "medium"},
	{Path: "~/.nuget/NuGet/NuGet.Config", Clients: []string{"dotnet", "nuget", "mono"}, Severity: "medium"},
	{Path: "~/.composer/auth.json", Clients: []string{"composer", "php"}},
	{Path: "~/.config/composer/auth.json", Clients: []string{"composer", "php"}},
	{Path: "~/.bundle/config", Clients: []string{"bundle", "bundler", "ruby"}, Severity: "medium"},
	{Path: "~/.config/pip/pip.conf", Clients: []string{"pip", "pip3", "python", "uv"}, Severity: "medium"},
	{Path: "~/.pip/pip.conf", Clients: []string{"pip", "pip3", "python", "uv"}, Severity: "medium"},
	// Model hubs.
	{Path: "~/.cache/huggingface/token", Clients: []string{"huggingface-cli", "hf"}},
	{Path: "~/.cache/huggingface/stored_tokens", Clients: []string{"huggingface-cli", "hf"}},
	{Path: "~/.huggingface/token", Clients: []string{"huggingface-cli", "hf"}},
	{Path: "~/.kaggle/kaggle.json", Clients: []string{"kaggle"}},
	// Sync tools.
	{Path: "~/.config/rclone/rclone.conf", Clients: []string{"rclone"}},
	{Path: "~/.dropbox/**", Clients: []string{"dropbox"}},
	{Path: "~/.config/syncthing/**", Clients: []string{"syncthing"}, Severity: "medium"},
	// Shell and REPL histories: commands typed with their tokens.
	{Path: "~/.bash_history", Clients: []string{"bash"}, Severity: "medium"},
	{Path: "~/.zsh_history", Clients: []string{"zsh"}, Severity: "medium"},
	{Path: "~/.local/share/fish/fish_history", Clients: []string{"fish"}, Severity: "medium"},
	{Path: "~/.python_history", Clients: []string{"python"}, Severity: "medium"},
	{Path: "~/.psql_history", Clients: pgClients, Severity: "medium"},
	{Path: "~/.mysql_history", Clients: mysqlClients, Severity: "medium"},
	{Path: "~/.node_repl_history", Clients: []string{"node"}, Severity: "medium"},
	{Path: "~/.sqlite_history", Clients: []string{"sqlite3"}, Severity: "medium"},
	{Path: "~/.rediscli_history", Clients: []string{"redis-cli"}, Severity: "medium"},
	// Service-account tokens and the system's own secrets.
	{Path: "/var/run/secrets/**", Clients: []string{"kubectl"}},
	{Path: "/run/secrets/**", Clients: []string{"kubectl"}},
	{Path: "/etc/ssh/ssh_host_*_key", Clients: []string{"sshd", "ssh-keygen"}},
	{Path: "/etc/shadow", Clients: []string{"login", "su", "sudo", "passwd", "unix_chkpwd"}},
	{Path: "/etc/gshadow", Clients: []string{"login", "su", "sudo", "gpasswd"}},
	{Path: "!**/.env.example"},
	{Path: "!**/.env.sample"},
	{Path: "!**/.env.template"},
	{Path: "!**/.env.dist"},
	{Path: "!**/.env.defaults"},
	{Path: ".env", Severity: "medium"},
	{Path: ".env.*", Severity: "medium"},
	{Path: ".npmrc", Clients: npmClients, Severity: "medium"},
}

// DefaultAgentConfigPaths are the agents' own credentials and settings,
// from their profiles. The agent itself reading them is bookkeeping;
// anything else is a finding.
var DefaultAgentConfigPaths = pathRules(agent.CredentialFiles())

// DefaultTranscriptPaths are where the agents write their own account of
// a session (their transcripts), from the agent profiles: the agent
// appending to or rewriting them is its own bookkeeping; anything else
// changing them is tampering with the evidence (transcript-tamper).
var DefaultTranscriptPaths = pathRules(agent.TranscriptFiles())

// DefaultTamperPaths are the agents' safety settings (permissions,
// sandbox, hooks, approval policy), from their profiles' SandboxSettings,
// and polygraph's own: its stores (sessions, integrity pins and
// first-seen hashes, baselines; the user's and the sudo store) and
// /etc/polygraph, where a policy only root can change lives. The traced
// tree writing any of them is changing what polygraph trusts or reports
// next time (a session planted to be "last", a pin for its own script), so
// they rank high. Global (per-user) files rank above project files. A
// policy file given on the command line joins them (Policy.Protect).
var DefaultTamperPaths = append(pathRules(agent.SandboxSettingsFiles()), PolygraphPaths...)

// PolygraphPaths are polygraph's own stores and configuration, as tamper
// paths.
var PolygraphPaths = []PathRule{
	{Path: "~/.local/share/polygraph/**", Severity: "high"},
	{Path: "/var/lib/polygraph/**", Severity: "high"},
	{Path: "/etc/polygraph/**", Severity: "high"},
}

// pathRules turns profile files into policy path rules.
func pathRules(files []agent.File) []PathRule {
	out := make([]PathRule, 0, len(files))
	for _, f := range files {
		out = append(out, PathRule{Path: f.Path, Clients: slices.Clone(f.Clients), Severity: f.Severity})
	}
	return out
}

// DefaultNoisePaths are written in the course of ordinary work: temporary
// files, caches, dependency trees, lock files, VCS internals, the user's
// dot-directories. Writes there are not "unmentioned writes" nor
// noteworthy in unattributed activity.
var DefaultNoisePaths = []string{
	"/tmp/**", "/var/tmp/**", "/dev/**", "/proc/**", "/sys/**", "/run/**", "/var/cache/**",
	"~/.*", "~/.*/**",
	"**/node_modules/**", "**/__pycache__/**", "*.pyc", "**/.pytest_cache/**", "**/.mypy_cache/**",
	"**/.ruff_cache/**", "**/.tox/**", "**/.nox/**", "**/.venv/**", "**/venv/**", "**/.git/**",
	"**/.gradle/**", "**/.next/**", "**/.nyc_output/**", "**/coverage/**", ".coverage", "**/target/**",
	"*.swp", "*.swx", "*~", ".DS_Store",
	"go.sum", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "bun.lock",
	"Cargo.lock", "poetry.lock", "uv.lock", "Pipfile.lock", "Gemfile.lock", "composer.lock", "mix.lock",
}

// DefaultTestRunners are the commands that run test suites.
var DefaultTestRunners = []string{
	"go test", "gotestsum", "ginkgo",
	"pytest", "py.test", "python -m pytest", "python -m unittest", "python manage.py test", "nose2", "tox", "nox",
	"npm test", "npm t", "npm run test*", "npm run spec*", "yarn test", "yarn run test*", "pnpm test", "pnpm run test*",
	"bun test", "bun run test*", "deno test", "node --test",
	"jest", "vitest", "mocha", "ava", "tap", "karma", "playwright test", "cypress run",
	"cargo test", "cargo nextest",
	"make test", "make tests", "make check", "make *test*", "ctest", "meson test", "ninja test",
	"mvn test", "mvn verify", "mvnw test", "mvnw verify", "gradle test", "gradle check", "gradlew test", "gradlew check",
	"rspec", "bundle exec rspec", "bundle exec rake test", "rake test", "rails test", "ruby -Itest",
	"phpunit", "pest", "dotnet test", "mix test", "swift test", "zig test", "zig build test", "bats", "prove",
	"stack test", "cabal test", "dune test", "sbt test", "lein test", "flutter test", "dart test",
}

// DefaultTestFiles are paths a test run reads.
var DefaultTestFiles = []string{
	"*_test.go", "test_*.py", "*_test.py", "conftest.py", "*.test.*", "*.spec.*", "*_spec.rb", "*_test.rb",
	"*Test.java", "*Tests.java", "*Test.kt", "*Tests.cs", "*Test.php", "*_test.exs", "*_test.dart",
	"**/tests/**", "**/test/**", "**/spec/**", "**/__tests__/**", "**/testdata/**",
}

// DefaultPackageManagers are the commands that install packages.
var DefaultPackageManagers = []string{
	"pip install", "pip download", "python -m pip install", "uv pip install", "uv add", "uv sync", "uv tool install",
	"poetry add", "poetry install", "pipx install", "conda install", "mamba install", "pdm add", "pdm install",
	"npm install", "npm i", "npm add", "npm ci", "npm update", "yarn add", "yarn install", "pnpm add",
	"pnpm install", "pnpm i", "bun add", "bun install", "bun i",
	"go get", "go install", "go mod download", "go mod tidy",
	"cargo add", "cargo install", "cargo fetch",
	"gem install", "bundle install", "bundle add",
	"apt install", "apt-get install", "aptitude install", "dpkg -i", "brew install", "apk add", "dnf install", "yum install",
	"composer require", "composer install", "dotnet add", "mix deps.get", "nuget install",
}

// DefaultPublishCommands publish packages or images.
var DefaultPublishCommands = []string{
	"npm publish", "yarn publish", "yarn npm publish", "pnpm publish", "bun publish",
	"gem push", "twine upload", "python -m twine upload", "cargo publish",
	"docker push", "podman push", "buildah push", "poetry publish", "uv publish", "flit publish", "hatch publish",
	"mvn deploy", "gradle publish*", "gradlew publish*", "dotnet nuget push", "nuget push", "helm push",
	"vsce publish", "ovsx publish",
	"pdm publish", "pnpm -r publish", "pnpm --recursive publish", "lerna publish", "changeset publish",
	"jsr publish", "deno publish", "mix hex.publish", "lein deploy", "sbt publish*", "mvnw deploy",
	"dart pub publish", "flutter pub publish", "anaconda upload", "gh release upload", "jf rt upload", "jfrog rt upload",
	"rake release", "bundle exec rake release", "oras push", "crane push", "skopeo copy",
}

// DefaultBuildTools write files that are then expected to be executed:
// compilers, linkers and package managers. write-then-exec does not report
// their output.
var DefaultBuildTools = []string{
	"go", "compile", "link", "asm", "cgo", "cc", "c++", "gcc", "g++", "gcc-*", "g++-*", "clang", "clang++", "clang-*",
	"cc1", "cc1plus", "as", "ld", "ld.*", "lld", "collect2", "rustc", "cargo", "javac", "zig", "tsc", "esbuild",
	"swiftc", "swift-frontend", "dotnet", "csc", "ghc", "ocamlopt", "nim",
	"npm", "npx", "pnpm", "yarn", "bun", "pip", "uv", "poetry", "pipx", "gem", "bundle", "apt", "apt-get", "dpkg",
	"brew", "apk", "dnf", "yum", "conda", "mamba",
}

// DefaultArtifacts are package artifacts; many built in one session feed
// mass-publish.
var DefaultArtifacts = []string{
	"!~/.*/**", "!**/node_modules/**", "!**/site-packages/**", "!**/.venv/**",
	"*.gem", "*.tgz", "*.whl", "*.tar.gz", "*.crate", "*.nupkg", "*.vsix",
}

// DefaultUnixPeers are the programs outside the traced tree a process
// of the tree may reach over a Unix socket or a FIFO without a finding:
// the system's own services, which serve every process the same way (name
// lookups, the logs, the session bus, the key agents). Anything else on
// the other end (a terminal multiplexer's server, a helper started before
// the session, a container daemon) can act for the tree outside it
// (escaped-tree).
var DefaultUnixPeers = []string{
	"systemd", "systemd-*", "init", "dbus-daemon", "dbus-broker", "dbus-broker-launch", "nscd", "unscd", "sssd*",
	"ssh-agent", "gpg-agent", "keyboxd", "scdaemon", "gnome-keyring-daemon", "polkitd", "rsyslogd", "syslog-ng",
	"pipewire", "pipewire-pulse", "wireplumber", "pulseaudio", "Xorg", "Xwayland", "avahi-daemon", "cupsd",
}

// DefaultAgentPrograms are the agents' program names, from their
// profiles. Without a
// transcript, the traced command's own process and the processes of these
// programs it starts stand in for the agent.
var DefaultAgentPrograms = agent.Programs()

// DefaultThresholds are the built-in thresholds.
var DefaultThresholds = Thresholds{
	PublishCount:      3,
	Artifacts:         5,
	RegistryBytesSent: 8 << 20,
	TestMinDuration:   200 * time.Millisecond,
	DNSWindow:         10 * time.Second,
}
