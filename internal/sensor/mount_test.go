package sensor

import (
	"slices"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// mountRec builds an EV_MOUNT record with its six strings.
func mountRec(op uint8, flags uint64, fd int32, p, base, p2, base2, typ, data []byte) []byte {
	r := polygraphEvMount{H: hdr(evMount, 7, 1, 1, "mount"), Result: 0, Flags: flags, Fd: fd, Op: op,
		PathLen: uint16(len(p)), BaseLen: uint16(len(base)), Path2Len: uint16(len(p2)), Base2Len: uint16(len(base2)),
		TypeLen: uint16(len(typ)), DataLen: uint16(len(data))}
	return rec(&r, p, base, p2, base2, typ, data)
}

func z(s string) []byte { return []byte(s + "\x00") }

func TestDecodeMount(t *testing.T) {
	cwd := walk("home", "u", "w")
	tests := []struct {
		name        string
		b           []byte
		op          string
		path, path2 string
		fstype      string
		data        string
		layers      []string
		fd          *int32
	}{
		{"bind, relative, the old magic dropped", mountRec(1, 0xc0ed0000|0x1000, -1, z("mnt"), cwd, z("../.aws"), nil, nil, nil),
			"mount", "/home/u/w/mnt", "/home/u/.aws", "", "", nil, nil},
		{"overlay: layers resolved against the cwd, escapes undone", mountRec(1, 0, -1, z("/m"), cwd, z("overlay"), nil, z("overlay"),
			z(`lowerdir=a\:b:/l2::/data,upperdir=up,workdir=wk,xino=off`)),
			"mount", "/m", "", "overlay", `lowerdir=a\:b:/l2::/data,upperdir=up,workdir=wk,xino=off`,
			[]string{"/home/u/w/a:b", "/l2", "/data", "/home/u/w/up"}, nil},
		{"cifs: no password kept", mountRec(1, 0, -1, z("/m"), cwd, z("//srv/share"), nil, z("cifs"), z("username=u,password=hunter2")),
			"mount", "/m", "", "cifs", "", nil, nil},
		{"move_mount of a detached tree", mountRec(4, 4, 3, z("nt"), cwd, z(""), cwd, nil, nil),
			"move_mount", "/home/u/w/nt", "", "", "", nil, event.Ptr(int32(3))},
		{"fsconfig lowerdir", mountRec(6, 1, 4, z(""), cwd, nil, nil, z("lowerdir"), z("../.aws:x")),
			"fsconfig", "", "", "", "lowerdir=../.aws:x", []string{"/home/u/.aws", "/home/u/w/x"}, event.Ptr(int32(4))},
		{"fsconfig password", mountRec(6, 1, 4, z(""), cwd, nil, nil, z("password"), z("hunter2")),
			"fsconfig", "", "", "", "password", nil, event.Ptr(int32(4))},
		{"fsconfig lowerdir+ by fd", mountRec(6, 5, 4, nil, nil, nil, walk("home", "u", ".ssh"), z("lowerdir+"), nil),
			"fsconfig", "", "", "", "lowerdir+", []string{"/home/u/.ssh"}, event.Ptr(int32(4))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewDecoder(time.Unix(0, 0)).Decode(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != event.KindMount || e.MountOp() != tc.op || e.Path != tc.path || e.Path2 != tc.path2 || e.FSType() != tc.fstype ||
				e.MountData() != tc.data || !slices.Equal(e.MountLayers(), tc.layers) {
				t.Errorf("got %s %s path %q path2 %q type %q data %q layers %q", e.Kind, e.MountOp(), e.Path, e.Path2, e.FSType(), e.MountData(), e.MountLayers())
			}
			if (e.MountFD() == nil) != (tc.fd == nil) || tc.fd != nil && *e.MountFD() != *tc.fd {
				t.Errorf("fd %v, want %v", e.MountFD(), tc.fd)
			}
		})
	}
	if _, err := NewDecoder(time.Unix(0, 0)).Decode(mountRec(1, 0, -1, z("/m"), nil, nil, nil, nil, nil)[:dataOff+1]); err == nil {
		t.Error("a record shorter than its lengths decoded")
	}
}
