package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// attr emits a chown or xattr event of p.
func (p *tproc) attr(kind event.Kind, file string, a *event.Attr, result int64) *event.Event {
	return p.b.emit(p, &event.Event{Kind: kind, Path: file, Attr: a, Result: event.Ptr(result)})
}

// TestPrivilegeAttrs runs the ownership and extended-attribute cases of
// privilege-escalation.
func TestPrivilegeAttrs(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "file capabilities set by a script, not setcap",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 caps.py")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "caps.py")
				py.attr(event.KindXattr, "/tmp/x/sh", &event.Attr{XattrName: "security.capability", XattrOp: "set"}, 0)
			},
			want: []string{"high privilege-escalation"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, "file capabilities set") || fs[0].ToolCallID != "t1" {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "an ACL on a file outside the project, refused; an owner change of sudoers",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "setfacl -m u:nobody:r ~/.bashrc; chown 1000 /etc/sudoers.d/x")
				sf := ag.spawn(200, "t1", "/usr/bin/setfacl", "setfacl", "-m", "u:nobody:r", home+"/.bashrc")
				sf.attr(event.KindXattr, home+"/.bashrc", &event.Attr{XattrName: "system.posix_acl_access", XattrOp: "set"}, -13)
				ch := ag.spawn(201, "t1", "/usr/bin/chown", "chown", "1000", "/etc/sudoers.d/x")
				ch.attr(event.KindChown, "/etc/sudoers.d/x", &event.Attr{Owner: event.Ptr(uint32(1000))}, 0)
			},
			want: []string{"high privilege-escalation", "medium privilege-escalation"},
		},
		{
			// CI runners and sandboxes put HOME under /tmp: a home is not
			// scratch space, while /tmp beside it still is.
			name: "an ACL and an owner change in a home under /tmp",
			build: func(b *builder) {
				const h = "/tmp/ci-1/home"
				b.homes = append(b.homes, h, "/tmp") // an account whose home is /tmp itself
				ag := b.agent(100, "/usr/local/bin/claude").home(h)
				b.shell("t1", "setfacl -m u:nobody:rw ~/.ssh/authorized_keys; chown 65534 ~/.local/share/x/tool.sh /tmp/ci-1/scratch")
				sf := ag.spawn(200, "t1", "/usr/bin/setfacl", "setfacl", "-m", "u:nobody:rw", h+"/.ssh/authorized_keys").home(h)
				sf.attr(event.KindXattr, h+"/.ssh/authorized_keys", &event.Attr{XattrName: "system.posix_acl_access", XattrOp: "set"}, 0)
				ch := ag.spawn(201, "t1", "/usr/bin/chown", "chown", "65534", h+"/.local/share/x/tool.sh").home(h)
				ch.attr(event.KindChown, h+"/.local/share/x/tool.sh", &event.Attr{Owner: event.Ptr(uint32(65534))}, 0)
				ch.attr(event.KindChown, "/tmp/ci-1/scratch", &event.Attr{Owner: event.Ptr(uint32(65534))}, 0)
			},
			want: []string{"medium privilege-escalation", "medium privilege-escalation"},
		},
		{
			name: "owners and ACLs in the project are its own business",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "chown -R 1000 . && setfacl -m u:1000:rw data")
				ch := ag.spawn(200, "t1", "/usr/bin/chown", "chown", "-R", "1000", ".")
				ch.attr(event.KindChown, proj+"/src/a.go", &event.Attr{Owner: event.Ptr(uint32(1000))}, 0)
				sf := ag.spawn(201, "t1", "/usr/bin/setfacl", "setfacl", "-m", "u:1000:rw", "data")
				sf.attr(event.KindXattr, proj+"/data", &event.Attr{XattrName: "system.posix_acl_access", XattrOp: "set"}, 0)
				sf.attr(event.KindXattr, proj+"/data", &event.Attr{XattrName: "user.mime_type", XattrOp: "set"}, 0)
			},
			want: nil,
		},
	})
}
