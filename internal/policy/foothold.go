package policy

import "net/netip"

// Footholds: the files an attacker writes to keep access (persistence) or
// to widen it (privilege). The persistence and privilege-escalation rules
// ask about them; docs/rules.md names the technique of each group.

// DefaultPersistencePaths are the files that make something run again
// later, by the user's login, a timer, a service manager, the dynamic
// linker or git: each entry's severity overrides the rule's default.
var DefaultPersistencePaths = []PathRule{
	// Git writes sample hooks on init and clone; they never run.
	{Path: "!**/.git/hooks/*.sample"},
	// The privilege paths among the drop-in directories below are
	// privilege-escalation's.
	{Path: "!/etc/sudoers.d/**"}, {Path: "!/etc/pam.d/**"}, {Path: "!/etc/security/**"},
	{Path: "!/etc/polkit-1/**"}, {Path: "!/etc/modprobe.d/**"}, {Path: "!/etc/udev/rules.d/**"},
	{Path: "!/etc/binfmt.d/**"}, {Path: "!/usr/lib/udev/rules.d/**"}, {Path: "!/lib/udev/rules.d/**"},
	{Path: "~/.ssh/authorized_keys*"},
	{Path: "~/.ssh/rc"},
	{Path: "~/.ssh/environment"},
	{Path: "/etc/ssh/sshd_config"},
	{Path: "/etc/ssh/sshd_config.d/**"},
	{Path: "~/.bashrc"}, {Path: "~/.bash_profile"}, {Path: "~/.bash_login"}, {Path: "~/.bash_logout"},
	{Path: "~/.profile"}, {Path: "~/.zshrc"}, {Path: "~/.zshenv"}, {Path: "~/.zprofile"}, {Path: "~/.zlogin"},
	{Path: "~/.config/fish/config.fish"}, {Path: "~/.config/fish/conf.d/**"},
	{Path: "/etc/profile"}, {Path: "/etc/profile.d/**"}, {Path: "/etc/bash.bashrc"}, {Path: "/etc/bashrc"},
	{Path: "/etc/zsh/**"}, {Path: "/etc/environment"},
	{Path: "/etc/crontab"}, {Path: "/etc/cron.*/**"}, {Path: "/etc/anacrontab"}, {Path: "/var/spool/cron/**"},
	{Path: "/etc/systemd/system/**"}, {Path: "/etc/systemd/user/**"}, {Path: "/run/systemd/system/**"},
	{Path: "~/.config/systemd/**"}, {Path: "~/.local/share/systemd/user/**"},
	{Path: "/etc/rc.local"}, {Path: "/etc/init.d/**"}, {Path: "/etc/update-motd.d/**"},
	{Path: "**/.git/hooks/*"},
	{Path: "/etc/ld.so.preload"}, {Path: "/etc/ld.so.conf"}, {Path: "/etc/ld.so.conf.d/**"},
	{Path: "~/.config/autostart/**"}, {Path: "/etc/xdg/autostart/**"},
	{Path: "~/Library/LaunchAgents/**"}, {Path: "/Library/LaunchAgents/**"}, {Path: "/Library/LaunchDaemons/**"},
	// Systemd units wherever they live, and the system's drop-in
	// directories of every service that runs what it reads (apt hooks,
	// logrotate scripts, NetworkManager dispatchers, X sessions...).
	{Path: "/usr/lib/systemd/**"}, {Path: "/lib/systemd/**"}, {Path: "/usr/local/lib/systemd/**"},
	{Path: "/etc/systemd/**"}, {Path: "/etc/*.d/**"}, {Path: "/etc/*/*.d/**"},
	{Path: "/etc/apt/apt.conf"}, {Path: "/etc/logrotate.conf"},
	// Version control configuration that runs programs (core.fsmonitor,
	// core.sshCommand, credential.helper, hooksPath, aliases with "!").
	// git writing its own configuration is judged by the setting it
	// writes (a git config command), not by the file.
	{Path: "~/.gitconfig", Clients: gitClients}, {Path: "~/.config/git/config", Clients: gitClients},
	{Path: "/etc/gitconfig", Clients: gitClients}, {Path: "**/.git/config", Clients: gitClients},
	{Path: "**/.git/hooks/**"}, {Path: "~/.hgrc", Clients: []string{"hg"}}, {Path: "**/.hg/hgrc", Clients: []string{"hg"}},
	// Interpreter start-up: code every run of the interpreter loads.
	{Path: "**/site-packages/*.pth"}, {Path: "**/dist-packages/*.pth"},
	{Path: "**/sitecustomize.py"}, {Path: "**/usercustomize.py"},
	{Path: "~/.Rprofile"}, {Path: "~/.perldb"},
	// Package managers' configuration, which can name programs and
	// scripts they run (npm's script-shell and node-options, pip's
	// index, cargo's runner and build.rustc-wrapper).
	{Path: "~/.npmrc", Clients: []string{"npm", "npx", "pnpm"}}, {Path: "~/.yarnrc", Clients: []string{"yarn"}},
	{Path: "~/.yarnrc.yml", Clients: []string{"yarn"}}, {Path: "~/.config/pip/pip.conf", Clients: []string{"pip", "pip3"}},
	{Path: "~/.pip/pip.conf", Clients: []string{"pip", "pip3"}}, {Path: "/etc/pip.conf", Clients: []string{"pip", "pip3"}},
	{Path: "~/.cargo/config"}, {Path: "~/.cargo/config.toml"}, {Path: "~/.gemrc", Clients: []string{"gem"}},
	{Path: "~/.bundle/config", Clients: []string{"bundle", "bundler"}}, {Path: "/etc/apt/sources.list"},
	// The ssh client's configuration: ProxyCommand, LocalCommand, Match exec.
	{Path: "~/.ssh/config"}, {Path: "/etc/ssh/ssh_config"}, {Path: "/etc/ssh/ssh_config.d/**"},
	// Agents' global instructions and hooks: every later session of the
	// agent reads them as the user's own words.
	{Path: "~/.claude/CLAUDE.md"}, {Path: "~/.claude/commands/**"}, {Path: "~/.claude/agents/**"},
	{Path: "~/.claude/hooks/**"}, {Path: "~/.codex/AGENTS.md"}, {Path: "~/.codex/instructions.md"},
	{Path: "~/.gemini/GEMINI.md"}, {Path: "~/.config/mini-swe-agent/*.yaml"},
}

// gitClients are git's programs: git writing its own configuration.
var gitClients = []string{"git"}

// DefaultPrivilegePaths are the files that say who may do what: accounts,
// groups, sudo and PAM.
var DefaultPrivilegePaths = []PathRule{
	{Path: "/etc/sudoers"}, {Path: "/etc/sudoers.d/**"}, {Path: "/etc/doas.conf"},
	{Path: "/etc/passwd"}, {Path: "/etc/shadow"}, {Path: "/etc/group"}, {Path: "/etc/gshadow"},
	{Path: "/etc/subuid"}, {Path: "/etc/subgid"},
	{Path: "/etc/security/**"}, {Path: "/etc/pam.d/**"}, {Path: "/etc/pam.conf"},
	{Path: "/etc/polkit-1/rules.d/**"}, {Path: "/etc/polkit-1/localauthority/**"},
	// What the kernel runs, as root, on its own: a core dump's pipe, the
	// module loader, a binary format's interpreter, the hotplug helper,
	// a device rule.
	{Path: "/proc/sys/kernel/core_pattern"}, {Path: "/proc/sys/kernel/modprobe"}, {Path: "/proc/sys/kernel/hotplug"},
	{Path: "/proc/sys/fs/binfmt_misc/**"}, {Path: "/sys/kernel/uevent_helper"},
	{Path: "/etc/modprobe.d/**"}, {Path: "/usr/lib/modprobe.d/**"}, {Path: "/lib/modprobe.d/**"},
	{Path: "/etc/udev/rules.d/**"}, {Path: "/usr/lib/udev/rules.d/**"}, {Path: "/lib/udev/rules.d/**"},
	{Path: "/etc/binfmt.d/**"}, {Path: "/usr/lib/binfmt.d/**"},
	// What vouches for the system's binaries: a tree that rewrites dpkg's
	// checksums can bless a trojaned program.
	{Path: "/var/lib/dpkg/info/*.md5sums"}, {Path: "/var/lib/dpkg/status"},
}

// Persistence returns the persistence entry path matches.
func (p *Policy) Persistence(path, home string) (PathRule, bool) {
	return p.persistence.Match(path, home)
}

// Privilege returns the privilege entry path matches.
func (p *Policy) Privilege(path, home string) (PathRule, bool) { return p.privilege.Match(path, home) }

// StubResolvers are the local resolvers a system's resolv.conf points
// name lookups at besides its own nameservers: systemd-resolved's stub
// and a local cache (dnsmasq, nscd-less unbound) on loopback.
var StubResolvers = []string{"127.0.0.53", "127.0.0.54", "127.0.0.1", "::1"}

// AllowDNS reports whether a message to addr on port 53 is allowed DNS:
// egress.dns is on and addr is one of resolvers (the system's
// nameservers, which the caller read from /etc/resolv.conf) or a stub
// resolver. Whether the message parsed as DNS is the caller's to check.
func (p *Policy) AllowDNS(addr string, resolvers []string) bool {
	if p.Egress.DNS != nil && !*p.Egress.DNS {
		return false
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, lists := range [2][]string{resolvers, StubResolvers} {
		for _, r := range lists {
			if b, err := netip.ParseAddr(r); err == nil && b.Unmap() == a {
				return true
			}
		}
	}
	return false
}
