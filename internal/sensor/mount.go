package sensor

import (
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

// Mounts (bpf/mount.h): one EV_MOUNT record per mount(2), umount2 and
// call of the new mount API, decoded into a mount event. Every path is
// resolved by d.path, as every file event's is: a relative target or
// source, and an overlay's layers, against the working directory the
// record carries; open_tree's and move_mount's against their descriptors.

// mountOps names ev_mount.op (MOUNT_OP_* in bpf/events.h).
var mountOps = [8]string{1: "mount", 2: "umount", 3: "open_tree", 4: "move_mount", 5: "fsopen", 6: "fsconfig", 7: "fsmount"}

// The mount(2) flags the decoder reads (include/uapi/linux/mount.h).
const (
	msBind    = 0x1000
	msMove    = 0x2000
	msMgcMask = 0xffff0000
	msMgcVal  = 0xc0ed0000 // the old magic in the high half, which the kernel drops
)

// fsconfig's commands (FSCONFIG_* in bpf/mount.h).
const (
	fsconfigSetString    = 1
	fsconfigSetPath      = 3
	fsconfigSetPathEmpty = 4
	fsconfigSetFD        = 5
)

// mountDataMax is how much of an option string a mount event keeps.
const mountDataMax = 256

// pathKeys are the filesystem options whose value names a path: kept
// with their value (others, a password among them, are kept by name
// only); layerKeys those whose paths are trees the mount shows (an
// overlay's workdir is its scratch space, not a layer).
var (
	pathKeys  = map[string]bool{"source": true, "lowerdir": true, "lowerdir+": true, "upperdir": true, "workdir": true, "datadir+": true}
	layerKeys = map[string]bool{"lowerdir": true, "lowerdir+": true, "upperdir": true, "datadir+": true}
)

func (d *Decoder) decodeMount(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvMount](b)
	if err != nil {
		return nil, err
	}
	var parts [6][]byte
	off := 0
	for i, n := range []uint16{r.PathLen, r.BaseLen, r.Path2Len, r.Base2Len, r.TypeLen, r.DataLen} {
		if parts[i], err = data(b, &off, int(n)); err != nil {
			return nil, err
		}
	}
	p, base, p2, base2, typ, dat := parts[0], parts[1], parts[2], parts[3], cstring(parts[4]), cstring(parts[5])
	e := d.base(&r.H, event.KindMount)
	e.Result = d.i64.Ptr(r.Result)
	e.PathTruncated = r.H.Flags&(flagTruncPath|flagTruncUstr) != 0
	m := &event.Mount{MountOp: mountOps[r.Op&7]}
	e.Mount = m
	fd := r.Fd
	switch m.MountOp {
	case "mount":
		flags := uint32(r.Flags)
		if flags&msMgcMask == msMgcVal {
			flags &^= msMgcMask
		}
		e.Flags = d.u32.Ptr(flags)
		e.Path = d.path(r.H.Pid, p, base)
		if flags&(msBind|msMove) != 0 {
			e.Path2 = d.path(r.H.Pid, p2, base) // the source, resolved against the same cwd
		}
		m.FSType = typ
		if typ == "overlay" {
			m.MountData = bounded(dat)
			for _, opt := range splitEscaped(dat, ',') {
				k, v, _ := strings.Cut(opt, "=")
				m.MountLayers = append(m.MountLayers, d.layers(r.H.Pid, k, v, base)...)
			}
		}
	case "umount", "open_tree":
		e.Flags = d.u32.Ptr(uint32(r.Flags))
		e.Path = d.path(r.H.Pid, p, base)
	case "move_mount":
		e.Flags = d.u32.Ptr(uint32(r.Flags))
		e.Path = d.path(r.H.Pid, p, base)
		// From a path, or from the descriptor itself (an empty path,
		// MOVE_MOUNT_F_EMPTY_PATH): a detached tree of open_tree's or
		// fsmount's, named by its fd. Walked at exit, the descriptor is
		// already where it was moved to.
		if cstring(p2) == "" {
			m.MountFD = &fd
		} else {
			e.Path2 = d.path(r.H.Pid, p2, base2)
		}
	case "fsopen":
		e.Flags = d.u32.Ptr(uint32(r.Flags))
		m.FSType = typ
	case "fsconfig":
		e.Flags = d.u32.Ptr(uint32(r.Flags))
		m.MountFD = &fd
		m.MountData = typ
		switch r.Flags {
		case fsconfigSetString:
			if pathKeys[typ] {
				m.MountData = bounded(typ + "=" + dat)
				m.MountLayers = d.layers(r.H.Pid, typ, dat, base)
			}
		case fsconfigSetPath, fsconfigSetPathEmpty, fsconfigSetFD:
			if layerKeys[typ] {
				if l := d.path(r.H.Pid, p2, base2); l != "" {
					m.MountLayers = []string{l}
				}
			}
		}
	case "fsmount":
		e.Flags = d.u32.Ptr(uint32(r.Flags))
		m.MountFD = &fd
	}
	return e, nil
}

// layers returns the trees an overlay option k=v shows, resolved against
// the walked cwd base: each of lowerdir's colon-separated directories
// (an empty one marks where the data-only layers begin), upperdir's,
// lowerdir+'s and datadir+'s; none for any other option.
func (d *Decoder) layers(pid uint32, k, v string, base []byte) []string {
	if !layerKeys[k] || v == "" {
		return nil
	}
	var out []string
	for _, l := range splitEscaped(v, ':') {
		if l != "" {
			out = append(out, d.path(pid, []byte(l), base))
		}
	}
	return out
}

// splitEscaped splits s at sep, where a backslash escapes the character
// after it (an overlay's "\," and "\:"). An escaped sep loses its
// backslash; any other escape is kept for the next split (lowerdir's
// "\:" inside the option string's commas).
func splitEscaped(s string, sep byte) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != sep {
				cur.WriteByte(c)
			}
			cur.WriteByte(s[i])
		case c == sep:
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, cur.String())
}

// bounded is s cut to mountDataMax bytes.
func bounded(s string) string {
	if len(s) > mountDataMax {
		return s[:mountDataMax]
	}
	return s
}
