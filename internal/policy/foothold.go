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
}

// DefaultPrivilegePaths are the files that say who may do what: accounts,
// groups, sudo and PAM.
var DefaultPrivilegePaths = []PathRule{
	{Path: "/etc/sudoers"}, {Path: "/etc/sudoers.d/**"}, {Path: "/etc/doas.conf"},
	{Path: "/etc/passwd"}, {Path: "/etc/shadow"}, {Path: "/etc/group"}, {Path: "/etc/gshadow"},
	{Path: "/etc/subuid"}, {Path: "/etc/subgid"},
	{Path: "/etc/security/**"}, {Path: "/etc/pam.d/**"}, {Path: "/etc/pam.conf"},
	{Path: "/etc/polkit-1/rules.d/**"}, {Path: "/etc/polkit-1/localauthority/**"},
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
