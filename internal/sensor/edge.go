package sensor

import (
	"github.com/polygraph/polygraph/internal/event"
)

// exe returns the executable of process pid where the decoder has a way
// to ask (the live sensor reads /proc/PID/exe), else "".
func (d *Decoder) exe(pid uint32) string {
	if d.Exe == nil || pid == 0 {
		return ""
	}
	return d.Exe(pid)
}

// decodePeer turns an EV_PEER into a peer event: the tree's opener's,
// naming the FIFO (path and identity, from the kernel's file object) and
// the outside process on its other end. The kernel walks that process's
// executable where it still runs; the decoder asks /proc where it could not.
func (d *Decoder) decodePeer(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvPeer](b)
	if err != nil {
		return nil, err
	}
	ps, err := pieces(b, int(r.PathLen), int(r.ExeLen))
	if err != nil {
		return nil, err
	}
	e := d.base(&r.H, event.KindPeer)
	e.Path = walked(ps[0])
	e.PathTruncated = r.H.Flags&flagTruncPath != 0
	o := d.objSlab.New()
	o.Dev, o.Ino, o.FileType = userDev(r.Dev), r.Ino, fileType(r.Imode)
	e.Object = o
	e.Access = Access(r.Flags &^ (oCreat | oTrunc))
	e.Network.PeerPID = r.PeerPid
	if e.Network.PeerExe = walked(ps[1]); e.Network.PeerExe == "" {
		e.Network.PeerExe = d.exe(r.PeerPid)
	}
	in := false
	e.Network.PeerInTree = &in
	return e, nil
}
