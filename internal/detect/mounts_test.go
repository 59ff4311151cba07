package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

// mount is a mount(2) of the process: a bind of src at target (src
// empty: an overlay of layers), with its result.
func (p *tproc) mount(target, src string, layers []string, result int64) *event.Event {
	e := &event.Event{Kind: event.KindMount, Path: target, Result: event.Ptr(result), Mount: &event.Mount{MountOp: "mount"}}
	if src != "" {
		e.Path2, e.Flags = src, event.Ptr(uint32(msBind))
	} else {
		e.Flags, e.Mount.FSType, e.Mount.MountLayers = event.Ptr(uint32(0)), "overlay", layers
	}
	return p.b.emit(p, e)
}

// mountCall is any other call of the mount family.
func (p *tproc) mountCall(op, path string, fd *int32, layers []string, result int64) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindMount, Path: path, Result: event.Ptr(result),
		Mount: &event.Mount{MountOp: op, MountFD: fd, MountLayers: layers}})
}

// TestMounts: a mount makes its target another name of its sources. A
// read through it of a credential file is that file's read (an overlay
// gives the file an identity of its own); a mount of a store through
// which nothing was read, or the read failed (the isolation masked the
// store), is the attempt; a mount of an ordinary directory is nothing.
func TestMounts(t *testing.T) {
	secrets := []manifest.Secret{{Path: home + "/.aws/credentials", Dev: 2049, Ino: 77}}
	masks := &manifest.Isolation{Masked: []string{home + "/.aws", home + "/.ssh"}}
	unshare := func(b *builder) *tproc {
		ag := b.agent(100, "/usr/local/bin/claude")
		b.shell("t1", "unshare -Urm sh -c 'mount ... && cat ...'")
		return ag.spawn(200, "t1", "/usr/bin/sh", "sh", "-c", "...")
	}
	runCases(t, []ruleCase{
		{
			name: "an overlay whose lower layer is ~/.aws, read through its merged directory",
			build: func(b *builder) {
				b.secrets = secrets
				sh := unshare(b)
				sh.spawn(201, "", "/usr/bin/mount", "mount", "-t", "overlay").mount(proj+"/ov/merged", "", []string{proj + "/ov/upper", home + "/.aws"}, 0)
				sh.spawn(202, "", "/usr/bin/cat", "cat", proj+"/ov/merged/credentials").openObj(proj+"/ov/merged/credentials", "read", 45, 77)
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if !strings.Contains(f.Title, "~/.aws/credentials") || !strings.Contains(f.Detail, "opened as ~/proj/ov/merged/credentials, the same file by another name") || f.Blocked {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "a bind of the masked ~/.aws: the read finds the empty mask",
			build: func(b *builder) {
				b.secrets, b.iso = secrets, masks
				sh := unshare(b)
				sh.spawn(201, "", "/usr/bin/mount", "mount", "--bind").mount(proj+"/mnt", home+"/.aws", nil, 0)
				sh.spawn(202, "", "/usr/bin/cat", "cat", proj+"/mnt/credentials").openFail(proj+"/mnt/credentials", "read", 2)
			},
			want: []string{"medium sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if f.Title != "Credential store mounted: ~/.aws (blocked)" || !f.Blocked || len(f.Evidence) != 2 ||
					!strings.Contains(f.Detail, "the read of ~/.aws/credentials (as ~/proj/mnt/credentials) failed") || f.ToolCallID != "t1" {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "an overlay of the masked ~/.aws: the same",
			build: func(b *builder) {
				b.secrets, b.iso = secrets, masks
				sh := unshare(b)
				sh.spawn(201, "", "/usr/bin/mount", "mount", "-t", "overlay").mount(proj+"/ov/merged", "", []string{proj + "/ov/upper", home + "/.aws"}, 0)
				sh.spawn(202, "", "/usr/bin/cat", "cat", proj+"/ov/merged/credentials").openFail(proj+"/ov/merged/credentials", "read", 2)
			},
			want: []string{"medium sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if !fs[0].Blocked || !strings.Contains(fs[0].Detail, "mounted as a layer of an overlay at "+proj+"/ov/merged") {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "a bind of ~/.ssh with nothing read through it",
			build: func(b *builder) {
				b.secrets = []manifest.Secret{{Path: home + "/.ssh/id_ed25519", Dev: 2049, Ino: 90}}
				sh := unshare(b)
				sh.mount(proj+"/keys", home+"/.ssh", nil, 0)
			},
			want: []string{"medium sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if fs[0].Title != "Credential store mounted: ~/.ssh" || fs[0].Blocked {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "the new API: open_tree of ~/.aws, move_mount of the clone, read there",
			build: func(b *builder) {
				sh := unshare(b)
				py := sh.spawn(201, "", "/usr/bin/python3", "python3", "m.py")
				py.mountCall("open_tree", home+"/.aws", nil, nil, 3)
				py.mountCall("move_mount", proj+"/nt", event.Ptr(int32(3)), nil, 0)
				py.open(proj+"/nt/credentials", "read")
			},
			want: []string{"high sensitive-read"},
		},
		{
			name: "the new API: an overlay from fsopen, fsconfig lowerdir and fsmount, read there",
			build: func(b *builder) {
				sh := unshare(b)
				py := sh.spawn(201, "", "/usr/bin/python3", "python3", "m.py")
				py.mountCall("fsopen", "", nil, nil, 4)
				py.mountCall("fsconfig", "", event.Ptr(int32(4)), []string{home + "/.aws"}, 0)
				py.mountCall("fsconfig", "", event.Ptr(int32(4)), []string{proj + "/up"}, 0)
				py.mountCall("fsmount", "", event.Ptr(int32(4)), nil, 5)
				py.mountCall("move_mount", proj+"/m", event.Ptr(int32(5)), nil, 0)
				py.open(proj+"/m/credentials", "read")
			},
			want: []string{"high sensitive-read"},
		},
		{
			name: "a bind of a bind: the read is the store's",
			build: func(b *builder) {
				sh := unshare(b)
				sh.mount(proj+"/a", home+"/.aws", nil, 0)
				sh.mount(proj+"/b", proj+"/a", nil, 0)
				sh.open(proj+"/b/credentials", "read")
			},
			want: []string{"high sensitive-read"},
		},
		{
			name: "unmounted before the read: the directory underneath",
			build: func(b *builder) {
				sh := unshare(b)
				sh.mount(proj+"/a", home+"/.aws", nil, 0)
				sh.mountCall("umount", proj+"/a", nil, nil, 0)
				sh.open(proj+"/a/credentials", "read")
			},
			want: []string{"medium sensitive-read"}, // the mount, through which nothing was read
		},
		{
			name: "binds and overlays of ordinary directories, and a home, are nothing",
			build: func(b *builder) {
				b.secrets = append(secrets, manifest.Secret{Path: home + "/.config/hub", Dev: 2049, Ino: 80},
					manifest.Secret{Path: home + "/.cache/huggingface/token", Dev: 2049, Ino: 81})
				sh := unshare(b)
				sh.mount(proj+"/mnt", proj+"/src", nil, 0)
				sh.open(proj+"/mnt/main.go", "read")
				sh.mount(proj+"/ov", "", []string{proj + "/lower", proj + "/upper"}, 0)
				sh.open(proj+"/ov/credentials", "read")
				sh.mount("/tmp/newroot/home/dev", home, nil, 0)
				sh.mount("/tmp/newroot", "/", nil, 0)
				sh.mount("/tmp/newroot/home/dev/.config", home+"/.config", nil, 0) // holds ~/.config/hub, and everything else's
				sh.mount("/tmp/newroot/home/dev/.cache", home+"/.cache", nil, 0)
				sh.mountCall("umount", proj+"/mnt", nil, nil, 0)
			},
			want: nil,
		},
	})
}
