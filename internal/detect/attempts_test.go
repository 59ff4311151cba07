package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

// TestAttempts: attempts on a secret that did not reach it are findings
// naming it, (blocked): the open of a masked store's directory, a link or
// rename of a masked store, a refused open of another process's
// environment or descriptor; and a store taken under another name with
// no read after it. What is no attempt stays quiet.
func TestAttempts(t *testing.T) {
	tree := func(b *builder, cmd string) *tproc {
		ag := b.agent(100, "/usr/local/bin/claude")
		b.shell("t1", cmd)
		return ag.spawn(200, "t1", "/usr/bin/sh", "sh", "-c", cmd)
	}
	link := func(p *tproc, name, target string, res int64) *event.Event {
		return p.b.emit(p, &event.Event{Kind: event.KindLink, Path: name, Path2: target, Result: event.Ptr(res)})
	}
	blockedTitles := func(t *testing.T, fs []Finding) {
		for _, f := range fs {
			if !f.Blocked || !strings.HasSuffix(f.Title, "(blocked)") || !strings.Contains(f.Title+f.Detail, ".aws") && !strings.Contains(f.Title, "/proc/") {
				t.Errorf("not a blocked attempt naming the secret: %+v", f)
			}
		}
	}
	runCases(t, []ruleCase{
		{
			name: "a masked store's directory opened (tar of ~/.aws)",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				b.secrets = []manifest.Secret{{Path: home + "/.aws/credentials", Dev: 1, Ino: 2}}
				sh := tree(b, "tar -C ~ -cf x.tar .aws")
				sh.open(home, "read")
				sh.open(home+"/.aws", "read")
			},
			want:  []string{"high sensitive-read"},
			check: blockedTitles,
		},
		{
			name: "a masked store hard-linked, symlinked and its directory renamed",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				b.secrets = []manifest.Secret{{Path: home + "/.aws/credentials", Dev: 1, Ino: 2}}
				sh := tree(b, "ln ~/.aws/credentials c; ln -s ~/.aws/credentials l; mv ~/.aws ~/.x")
				link(sh, home+"/proj/c", home+"/.aws/credentials", -2)
				link(sh, home+"/proj/l", "../.aws/credentials", 0)
				sh.rename(home+"/.aws", home+"/.x")
				sh.openFail(home+"/proj/l", "read", 2)
			},
			want:  []string{"medium sensitive-read"},
			check: blockedTitles,
		},
		{
			name: "a store renamed away and never read, not isolated",
			build: func(b *builder) {
				sh := tree(b, "mv ~/.aws/credentials /tmp/c")
				sh.rename(home+"/.aws/credentials", "/tmp/c")
			},
			want: []string{"medium sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if fs[0].Blocked || !strings.HasPrefix(fs[0].Title, "Credential file moved: ~/.aws/credentials") {
					t.Errorf("%+v", fs[0])
				}
			},
		},
		{
			name: "another process's environment and descriptor, refused",
			build: func(b *builder) {
				sh := tree(b, "cat /proc/4242/environ /proc/4242/fd/3")
				sh.openFail("/proc/4242/environ", "read", 13)
				sh.openFail("/proc/4242/task/4243/fd/3", "read", 1)
				sh.openFail("/proc/200/environ", "read", 13) // its own
				sh.openFail("/proc/4242/fd/3", "read", 2)    // gone: not isolated, no attempt
			},
			want:  []string{"medium sensitive-read", "medium sensitive-read"},
			check: blockedTitles,
		},
		{
			name: "another process's environment in the isolation's PID namespace",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				b.iso.PIDNamespace = true
				sh := tree(b, "cat /proc/4242/environ")
				sh.openFail("/proc/4242/environ", "read", 2)
			},
			want:  []string{"medium sensitive-read"},
			check: blockedTitles,
		},
		{
			name: "another process opened with pidfd_open, refused in the isolation's PID namespace",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				b.iso.PIDNamespace = true
				sh := tree(b, "python3 take_fd.py")
				sh.openFail("/proc/4242", "read", 3)
				sh.openFail("/proc/200", "read", 3) // its own
			},
			want:  []string{"medium sensitive-read"},
			check: blockedTitles,
		},
		{
			name: "a pidfd_open of a process gone, not isolated",
			build: func(b *builder) {
				sh := tree(b, "python3 take_fd.py")
				sh.openFail("/proc/4242", "read", 3)
			},
			want: nil,
		},
		{
			name: "a kernel helper registered where the namespace has no binfmt_misc",
			build: func(b *builder) {
				sh := tree(b, "echo :x:E::job::/tmp/h: > /proc/sys/fs/binfmt_misc/register")
				sh.openFail("/proc/sys/fs/binfmt_misc/register", "write", 2)
				sh.openFail(home+"/proj/missing/new.txt", "write,create", 2) // no attempt on anything
			},
			want: []string{"medium privilege-escalation"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Title, "binfmt_misc") {
					t.Errorf("%+v", fs[0])
				}
			},
		},
		{
			name: "a masked key named on a command line that only looked at it",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				b.secrets = []manifest.Secret{{Path: home + "/.aws/credentials", Dev: 1, Ino: 2}}
				sh := tree(b, "diff /dev/null ~/.aws/credentials")
				sh.spawn(201, "t1", "/usr/bin/diff", "diff", "/dev/null", home+"/.aws/credentials")
				sh.spawn(202, "t1", "/usr/bin/cat", "cat", "--", "notes.txt") // not a store
			},
			want:  []string{"medium sensitive-read"},
			check: blockedTitles,
		},
		{
			name: "ordinary links, renames and opens",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				sh := tree(b, "ln -s ../src lib; mv a b; ls ~")
				link(sh, home+"/proj/lib", "../src", 0)
				sh.rename(home+"/proj/a", home+"/proj/b")
				sh.open(home, "read")
				sh.openFail("/proc/4242/stat", "read", 2)
			},
			want: nil,
		},
	})
}
