package record

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// TestOwnershipAndXattrs: chown and the xattr calls are events of their
// own kinds, with the ids and the attribute's name the call asked for,
// through every form (path, fd, at), read back from the stored session.
func TestOwnershipAndXattrs(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "tool")
	if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `import os
f = ` + "'" + f + "'" + `
os.chown(f, 1234, -1)
fd = os.open(f, os.O_RDONLY)
os.fchown(fd, -1, 5678)
os.setxattr(f, 'user.polygraph', b'x')
os.setxattr(fd, 'user.viafd', b'y')
os.removexattr(f, 'user.polygraph')
try:
    os.setxattr(f, 'security.capability', b'\x01\x00\x00\x02' + b'\x00' * 16)
except OSError:
    pass
`
	py := filepath.Join(dir, "attrs.py")
	if err := os.WriteFile(py, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	_, evs := recordScript(t, dir, "python3 "+py, 0)
	var chowns, sets, removes, caps []*event.Event
	for _, e := range evs {
		switch {
		case e.Kind == event.KindChown && e.Path == f:
			chowns = append(chowns, e)
		case e.Kind == event.KindXattr && e.Path == f && e.Attr.XattrOp == "set" && e.Attr.XattrName == "security.capability":
			caps = append(caps, e)
		case e.Kind == event.KindXattr && e.Path == f && e.Attr.XattrOp == "set":
			sets = append(sets, e)
		case e.Kind == event.KindXattr && e.Path == f && e.Attr.XattrOp == "remove":
			removes = append(removes, e)
		}
	}
	if len(chowns) != 2 {
		t.Fatalf("%d chown events of %s, want 2 (chown, fchown)", len(chowns), f)
	}
	if a := chowns[0].Attr; a == nil || a.Owner == nil || *a.Owner != 1234 || a.OwnerGroup != nil || chowns[0].Failed() {
		t.Errorf("chown(1234, -1) = %+v %+v", chowns[0], a)
	}
	if a := chowns[1].Attr; a == nil || a.Owner != nil || a.OwnerGroup == nil || *a.OwnerGroup != 5678 {
		t.Errorf("fchown(-1, 5678) = %+v %+v", chowns[1], a)
	}
	if len(sets) != 2 || sets[0].Attr.XattrName != "user.polygraph" || sets[1].Attr.XattrName != "user.viafd" {
		t.Errorf("setxattr events %v, want user.polygraph by path and user.viafd by fd", names(sets))
	}
	if len(removes) != 1 || removes[0].Attr.XattrName != "user.polygraph" {
		t.Errorf("removexattr events %v", names(removes))
	}
	if len(caps) != 1 {
		t.Errorf("%d setxattr security.capability events, want 1 (whatever its result)", len(caps))
	}
}

func names(evs []*event.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Attr.XattrName)
	}
	return out
}
