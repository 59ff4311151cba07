package detect

import (
	"os"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/transcript"
)

// The builder's events for the foothold, fetch and upload cases.

func (p *tproc) chmod(file string, mode uint32) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindChmod, Path: file, Mode: event.Ptr(mode), Result: event.Ptr(int64(0))})
}

func (p *tproc) link(target, name string) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindLink, Path: name, Path2: target, Result: event.Ptr(int64(0))})
}

// traffic is a net event: the bytes the process sent to and received from
// one peer.
func (p *tproc) traffic(addr string, port uint16, sent, recv uint64) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindNet, Network: &event.Network{Family: "ipv4", Proto: "tcp", Addr: addr, Port: port, BytesSent: sent, BytesRecv: recv}})
}

// resolve is a DNS query for name with its recorded answers.
func (p *tproc) resolve(name string, addrs ...string) *event.Event {
	e := p.dns(name)
	e.Network.Answers = addrs
	return e
}

// TestPersistence runs the persistence cases.
func TestPersistence(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "authorized_keys append under another home",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "echo ssh-ed25519 AAAA >> /root/.ssh/authorized_keys")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "echo … >> /root/.ssh/authorized_keys")
				sh.open("/root/.ssh/authorized_keys", "write,create")
				sh.exit(0)
			},
			want: []string{"high persistence"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; f.ToolCallID != "t1" || !strings.Contains(f.Detail, "T1098.004") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "rc file, cron, unit, hook and git core.sshCommand",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "…")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "…")
				sh.open(home+"/.bashrc", "write")
				sh.rename(home+"/.x.tmp", home+"/.config/systemd/user/up.service")
				sh.open(proj+"/.git/hooks/pre-commit", "write,create")
				sh.chmod(proj+"/.git/hooks/pre-commit", 0o755)
				sh.spawn(201, "", "/usr/bin/crontab", "crontab", "-").exit(0)
				sh.spawn(202, "", "/usr/bin/crontab", "crontab", "-l").exit(0)
				sh.spawn(203, "", "/usr/bin/git", "git", "config", "--global", "core.sshCommand", "ssh -i /tmp/k").exit(0)
				sh.spawn(204, "", "/usr/bin/git", "git", "config", "--get", "core.hooksPath").exit(0)
			},
			want: []string{"high persistence", "high persistence", "high persistence", "high persistence", "high persistence"},
		},
		{
			name: "sample hooks from git init, and husky's hook",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "git init && npm install")
				g := ag.spawn(200, "t1", "/usr/bin/git", "git", "init")
				g.open(proj+"/.git/hooks/pre-commit.sample", "write,create")
				g.exit(0)
				n := ag.spawn(201, "t1", "/usr/bin/node", "node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "install")
				n.spawn(202, "", "/usr/bin/git", "git", "config", "core.hooksPath", ".husky/_").exit(0)
				n.exit(0)
			},
			want: []string{"low persistence"},
		},
		{
			name: "a package install's cron job",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "apt-get install -y logrotate")
				a := ag.spawn(200, "t1", "/usr/bin/apt-get", "apt-get", "install", "-y", "logrotate")
				d := a.spawn(201, "", "/usr/bin/dpkg", "dpkg", "--unpack", "/var/cache/apt/archives/logrotate_3.21_amd64.deb")
				d.open("/etc/cron.daily/logrotate", "write,create")
			},
			want: []string{"low persistence"},
		},
		{
			name: "a package file the session brought: its maintainer script's cron job and setuid shell",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "dpkg -i ./helper.deb")
				d := ag.spawn(200, "t1", "/usr/bin/dpkg", "dpkg", "-i", "./helper.deb")
				post := d.spawn(201, "", "/bin/sh", "/bin/sh", "/var/lib/dpkg/info/helper.postinst", "configure")
				post.open("/etc/cron.d/helper", "write,create")
				c := post.open("/usr/local/bin/sh2", "write,create")
				c.Mode = event.Ptr(uint32(0o4755))
			},
			want: []string{"high persistence", "high privilege-escalation", "low claim-edit-mismatch"},
		},
		{
			name: "a dependency's postinstall plants a git hook",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "npm install")
				n := ag.spawn(200, "t1", "/usr/bin/node", "node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "install")
				h := n.spawn(201, "", "/bin/sh", "sh", "-c", "node install.js")
				h.exec.Process.Cwd = proj + "/node_modules/evil"
				h.open(proj+"/.git/hooks/pre-commit", "write,create")
			},
			want: []string{"high persistence"},
		},
		{
			name: "a cron job by a shell calling itself dpkg is no package install",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "exec -a dpkg sh -c 'echo … > /etc/cron.d/x'")
				d := ag.spawn(200, "t1", "/usr/bin/dash", "dpkg", "-c", "echo … > /etc/cron.d/x")
				d.open("/etc/cron.d/x", "write,create")
			},
			want: []string{"high persistence"},
		},
	})
}

// TestPrivilegeEscalation runs the privilege-escalation cases.
func TestPrivilegeEscalation(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "sudoers.d write, setuid bit, setcap",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "…")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "…")
				sh.open("/etc/sudoers.d/agent", "write,create")
				c := sh.spawn(201, "", "/usr/bin/chmod", "chmod", "u+s", "/usr/local/bin/sh2")
				c.chmod("/usr/local/bin/sh2", 0o4755)
				sh.spawn(202, "", "/usr/sbin/setcap", "setcap", "cap_setuid+ep", "/usr/local/bin/py").exit(0)
				sh.chmod(proj+"/run.sh", 0o755) // plain +x is nothing
				sh.emit(&event.Event{Kind: event.KindMkdir, Path: proj + "/share", Mode: event.Ptr(uint32(0o755)), Result: event.Ptr(int64(0))})
				sh.chmod(proj+"/share", 0o2775) // a shared directory
				sh.chmod(proj+"/tool", 0o2755)  // setgid on what may be a directory
			},
			want: []string{"high privilege-escalation", "high privilege-escalation", "high privilege-escalation", "medium privilege-escalation", "low claim-edit-mismatch"},
			check: func(t *testing.T, fs []Finding) {
				for _, f := range fs {
					if f.ToolCallID != "t1" || f.Rule == "privilege-escalation" && !strings.Contains(f.Detail, "T1548") {
						t.Errorf("finding %+v", f)
					}
				}
			},
		},
		{
			name: "a package install adds a user",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "apt-get install -y postgresql")
				a := ag.spawn(200, "t1", "/usr/bin/apt-get", "apt-get", "install", "-y", "postgresql")
				d := a.spawn(201, "", "/usr/bin/dpkg", "dpkg", "--configure", "-a")
				u := d.spawn(202, "", "/usr/sbin/useradd", "useradd", "postgres")
				u.rename("/etc/passwd+", "/etc/passwd")
			},
			want: []string{"low privilege-escalation", "low claim-edit-mismatch"},
		},
	})
}

func (p *tproc) emit(e *event.Event) *event.Event { return p.b.emit(p, e) }

// TestPersistenceByClass: the classes of later code execution beyond the
// fixed list: a system program shadowed earlier on PATH, a directory of
// hooks replaced by a symlink, a .pth file, a git config written directly.
func TestPersistenceByClass(t *testing.T) {
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Skip("no /usr/bin/git to shadow on this machine")
	}
	runCases(t, []ruleCase{
		{
			name: "git shadowed in ~/.local/bin",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cp evil ~/.local/bin/git")
				cp := ag.spawn(200, "t1", "/usr/bin/cp", "cp", "evil", home+"/.local/bin/git")
				cp.open(home+"/.local/bin/git", "write,create")
			},
			want: []string{"high persistence"},
			check: func(t *testing.T, fs []Finding) {
				if f := find(t, fs, "persistence"); !strings.Contains(f.Detail, "shadows /usr/bin/git") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "the hooks directory replaced by a symlink; a .pth file; .git/config written",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "setup")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "setup")
				sh.emit(&event.Event{Kind: event.KindLink, Path: proj + "/.git/hooks", Path2: "/tmp/h", Result: event.Ptr(int64(0)),
					Flags: event.Ptr(uint32(1 << 31))})
				sh.open(home+"/.local/lib/python3.11/site-packages/zz.pth", "write,create")
				sh.open(proj+"/.git/config", "write")
			},
			want: []string{"high persistence", "high persistence", "high persistence"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, "replaced") || !strings.Contains(fs[0].Detail, "git hook") {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
	})
}

// TestRefusedFootholds: an unprivileged tree reaching for a system
// persistence or privilege file shows its intent though the kernel
// refused it (medium, and said); polygraph's own record of trusted
// programs, wherever its home is, written by the tree is high; a refused
// read or a refused write elsewhere is nothing.
func TestRefusedFootholds(t *testing.T) {
	const pins = "/var/lib/polygraph/integrity/pins.json"
	runCases(t, []ruleCase{
		{
			name: "refused writes to sudoers and profile.d",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/kestrel")
				b.shell("t1", "echo x > /etc/sudoers.d/x; echo y > /etc/profile.d/y.sh")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "…")
				sh.openFail("/etc/sudoers.d/x", "write,create", 13)
				sh.openFail("/etc/profile.d/y.sh", "write,create", 13)
				sh.openFail("/etc/shadow", "read", 13)
				sh.openFail("/opt/app/data", "write,create", 13)
				sh.openFail("/usr/local/bin/sh", "write,create", 13) // shadowing /usr/bin/sh, refused
				// A write tool's atomic write: its temporary sibling is refused.
				sh.openFail("/etc/ld.so.preload.tmp.29395.e0a1552a41e6", "write,create", 13)
			},
			want: []string{"medium persistence", "medium persistence", "medium persistence", "medium privilege-escalation"},
			check: func(t *testing.T, fs []Finding) {
				preload := false
				for _, f := range fs {
					if f.Rule != "sensitive-read" && (!strings.Contains(f.Detail, "refused it (-13)") || f.ToolCallID != "t1") {
						t.Errorf("finding %+v, want the refusal said, on t1", f)
					}
					preload = preload || strings.HasSuffix(f.Title, "/etc/ld.so.preload")
				}
				if !preload {
					t.Error("no finding names /etc/ld.so.preload, the temporary file's target")
				}
			},
		},
		{
			name: "the pin file written, and a refused attempt at the first-seen file",
			build: func(b *builder) {
				b.trust = []string{pins, "/var/lib/polygraph/integrity/seen.json"}
				ag := b.agent(100, "/usr/local/bin/kestrel")
				b.shell("t1", "cp p.json "+pins)
				sh := ag.spawn(200, "t1", "/usr/bin/cp", "cp", "p.json", pins)
				sh.open(pins, "write,create")
				sh.openFail("/var/lib/polygraph/integrity/seen.json", "write", 13)
			},
			want: []string{"high sandbox-tamper", "medium sandbox-tamper"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, "polygraph's own store") || !strings.Contains(fs[1].Detail, "refused it (-13)") {
					t.Errorf("findings %+v", fs)
				}
			},
		},
		{
			// A write tool making the directories first: the kernel
			// refuses the mkdir, and the file is never tried.
			name: "refused mkdirs of a store's directory and of an autostart directory",
			build: func(b *builder) {
				b.trust = []string{"/tmp/pgstore/integrity/pins.json", "/tmp/pgstore/integrity/seen.json"}
				ag := b.agent(100, "/usr/local/bin/kestrel")
				b.tool("t1", transcript.KindWrite, "/tmp/pgstore/integrity/pins.json")
				b.tool("t2", transcript.KindWrite, home+"/.config/autostart/x.desktop")
				mkdirFail(ag.inCall("t1"), "/tmp/pgstore/integrity", 13)
				mkdirFail(ag.inCall("t2"), home+"/.config/autostart", 13)
				mkdirFail(ag.inCall("t2"), "/tmp/pgstore/other", 17) // there already: no attempt refused
			},
			want: []string{"medium sandbox-tamper", "medium persistence"},
			check: func(t *testing.T, fs []Finding) {
				for _, f := range fs {
					if !strings.Contains(f.Title, "refused attempt") && f.Rule == "persistence" || !strings.Contains(f.Detail, "refused it (-13)") {
						t.Errorf("finding %+v, want the refusal said", f)
					}
				}
			},
		},
		{
			// coreutils' mkdir -p walks the path with chdir, which no
			// event records: refused at a directory of root's, the walk's
			// last step is a mkdir that found its directory there.
			name: "mkdir -p stopped at polygraph's home",
			build: func(b *builder) {
				b.trust = []string{"/tmp/pgstore/integrity/pins.json"}
				ag := b.agent(100, "/usr/local/bin/kestrel")
				b.shell("t1", "mkdir -p /tmp/pgstore/integrity")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "mkdir -p /tmp/pgstore/integrity")
				m := sh.spawn(201, "", "/usr/bin/mkdir", "mkdir", "-p", "/tmp/pgstore/integrity")
				mkdirFail(m, "/tmp", 17)
				mkdirFail(m, "/tmp/pgstore", 17)
				m.exit(1)
				// The same walk that got there, and one still running,
				// are no attempt stopped.
				b.shell("t2", "mkdir -p /tmp/other/x; mkdir -p /tmp/third/y")
				sh2 := ag.spawn(300, "t2", "/usr/bin/bash", "bash", "-c", "mkdir -p /tmp/other/x; mkdir -p /tmp/third/y")
				m2 := sh2.spawn(301, "", "/usr/bin/mkdir", "mkdir", "-p", "/tmp/other/x")
				mkdirFail(m2, "/tmp/other", 17)
				mkdirFail(m2, "/tmp/other/x", 17)
				m2.exit(1)
				m3 := sh2.spawn(302, "", "/usr/bin/mkdir", "mkdir", "-p", "/tmp/third/y")
				mkdirFail(m3, "/tmp/third", 17)
			},
			want: []string{"medium sandbox-tamper"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; f.ToolCallID != "t1" || !strings.Contains(f.Title, "/tmp/pgstore/integrity") || !strings.Contains(f.Detail, "stopped at /tmp/pgstore") {
					t.Errorf("finding %+v, want the attempt at the pin directory, stopped at the store", f)
				}
			},
		},
		{
			// The first step of a trojan's install, refused: a system
			// program's directory. Python's bytecode cache beside a
			// system module, refused as a user imports it, is no attempt.
			name: "refused writes into the system's programs and libraries",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/kestrel")
				b.shell("t1", "printf x > /usr/lib/pkg/tool && md5sum … > /var/lib/dpkg/info/pkg.md5sums")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "…")
				sh.openFail("/usr/lib/pkg/tool", "write,create", 13)
				sh.openFail("/usr/lib/python3/dist-packages/m/__pycache__/x.cpython-311.pyc.140", "write,create", 13)
				sh.openFail("/usr/local/bin/sh", "write,create", 13) // shadowing: its own finding, not twice
			},
			want: []string{"medium persistence", "medium persistence"},
			check: func(t *testing.T, fs []Finding) {
				tool := false
				for _, f := range fs {
					if strings.HasSuffix(f.Title, "/usr/lib/pkg/tool") {
						tool = strings.Contains(f.Detail, "T1554") && strings.Contains(f.Title, "refused attempt")
					}
				}
				if !tool {
					t.Errorf("no refused attempt at /usr/lib/pkg/tool, T1554, in %+v", fs)
				}
			},
		},
		{
			// Claude Code's Write stats the file first: refused there, it
			// makes no call the sensor records. Its transcript says so.
			name: "write tool calls refused before any recorded call",
			build: func(b *builder) {
				b.trust = []string{"/tmp/pgstore/integrity/pins.json"}
				ag := b.agent(100, "/usr/local/bin/claude")
				denied := func(id, p, how string) {
					c := b.tool(id, transcript.KindWrite, p)
					c.IsError, c.Result = true, how+", stat '"+p+"'"
				}
				denied("t1", "/tmp/pgstore/integrity/pins.json", "EACCES: permission denied")
				denied("t2", home+"/.bashrc", "EACCES: permission denied")
				denied("t3", "/usr/lib/pkg/tool", "EPERM: operation not permitted")
				denied("t4", "/etc/sudoers.d/x", "EACCES: permission denied")
				ag.inCall("t4").openFail("/etc/sudoers.d/x", "write,create", 13) // recorded: one finding, on the event
				denied("t5", home+"/.profile", "File has not been read yet")     // not a refusal
			},
			want: []string{"medium sandbox-tamper", "medium persistence", "medium persistence", "medium privilege-escalation"},
			check: func(t *testing.T, fs []Finding) {
				for _, f := range fs {
					if f.ToolCallID == "t4" {
						if len(f.Evidence) != 1 {
							t.Errorf("finding %+v, want it on the refused open", f)
						}
						continue
					}
					if !strings.Contains(f.Detail, "transcript says the kernel refused it") || len(f.Evidence) != 0 {
						t.Errorf("finding %+v, want the transcript's refusal said", f)
					}
				}
			},
		},
	})
}

// mkdirFail is a mkdir of dir by p that failed with errno.
func mkdirFail(p *tproc, dir string, errno int64) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindMkdir, Path: dir, Mode: event.Ptr(uint32(0o755)), Result: event.Ptr(-errno)})
}
