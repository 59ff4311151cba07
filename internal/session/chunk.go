package session

import (
	"errors"
	"fmt"
	"math"

	"github.com/polygraph/polygraph/internal/event"

	"google.golang.org/protobuf/encoding/protowire"
)

// Events are stored in chunks: one row of the chunks table holds a run of
// consecutive events (up to maxBatch), each encoded in the protobuf wire
// format without a schema file, one length-delimited message per event.
// Compared with a row per event (version 1) writing costs 1.6 µs of CPU
// per event instead of ~9 (BenchmarkAdd, encoder and store together),
// reading about a quarter of the time (BenchmarkReadEvents: 0.85 µs an
// event, most of it allocating the events), and a million events take
// 62 MB instead of 156; the price is that the sqlite3 shell no longer
// shows events as rows (`polygraph events --json` does).
//
// Inside an event message every field is optional and appears only when
// it is not zero (the pointer fields: when not nil):
//
//   - integers are varints, signed ones zigzag-encoded (sint64);
//   - a string is either a varint, the id of a row of the strings table,
//     or inline bytes (wire type 2), for strings too long to be worth
//     interning;
//   - a list of strings repeats its field once per element;
//   - ts is the difference in ns from the chunk's first_ts.
//
// A reader skips fields it does not know, so a field added later only
// needs a new number here. Numbers are never reused.
const (
	fKind          protowire.Number = 1 // varint: kindCodes; an unknown kind is stored as fKindName
	fKindName      protowire.Number = 2 // string
	fTS            protowire.Number = 3 // sint64: ns since the chunk's first_ts
	fPID           protowire.Number = 4
	fTID           protowire.Number = 5
	fPPID          protowire.Number = 6
	fComm          protowire.Number = 7
	fExecID        protowire.Number = 8
	fParentExecID  protowire.Number = 9
	fPath          protowire.Number = 10
	fPath2         protowire.Number = 11
	fArgv          protowire.Number = 12 // repeated string
	fArgvTruncated protowire.Number = 13
	fPathTruncated protowire.Number = 14
	fCwd           protowire.Number = 15
	fScript        protowire.Number = 16
	fUID           protowire.Number = 17
	fSHA256        protowire.Number = 18
	fChildPID      protowire.Number = 19
	fChildExecID   protowire.Number = 20
	fExitCode      protowire.Number = 21 // sint64
	fSignal        protowire.Number = 22 // sint64
	fDurationNS    protowire.Number = 23
	fCPUNS         protowire.Number = 24
	fMaxRSSKB      protowire.Number = 25
	fReadBytes     protowire.Number = 26
	fWriteBytes    protowire.Number = 27
	fFlags         protowire.Number = 28
	fMode          protowire.Number = 29
	fAccess        protowire.Number = 30
	fResult        protowire.Number = 31 // sint64
	fFamily        protowire.Number = 32
	fProto         protowire.Number = 33
	fAddr          protowire.Number = 34
	fPort          protowire.Number = 35
	fHost          protowire.Number = 36
	fQName         protowire.Number = 37
	fQType         protowire.Number = 38
	fAnswers       protowire.Number = 39 // repeated string
	fBytesSent     protowire.Number = 40
	fBytesRecv     protowire.Number = 41
	// the file object of an open (event.Object); fIno is written
	// whenever the event has one, so its presence marks the group
	fDev           protowire.Number = 42
	fIno           protowire.Number = 43
	fFileType      protowire.Number = 44
	fNlink         protowire.Number = 45
	fPathRequested protowire.Number = 46
	fPathDiffers   protowire.Number = 47
	fDeleted       protowire.Number = 48 // exec
	fHome          protowire.Number = 49 // exec: the HOME of its environment
	fScriptSHA256  protowire.Number = 50 // exec; normally filled on read from exec_verdicts
	// more of event.Network
	fAddrUser   protowire.Number = 51
	fFastOpen   protowire.Number = 52
	fPeerPID    protowire.Number = 53
	fPeerExe    protowire.Number = 54
	fPeerInTree protowire.Number = 55 // varint 0 or 1, written whenever PeerInTree is set
	// event.Call
	fTargetPID     protowire.Number = 56
	fTargetExecID  protowire.Number = 57
	fMethod        protowire.Number = 58
	fAdopted       protowire.Number = 59
	fSigno         protowire.Number = 60
	fBPFCmd        protowire.Number = 61
	fTargetNSLocal protowire.Number = 62
	// an operation submitted through io_uring (event.Ring); fVia is
	// written whenever the event has one, so its presence marks the group
	fVia           protowire.Number = 63
	fRingOp        protowire.Number = 64
	fResultUnknown protowire.Number = 65
	fRingOps       protowire.Number = 66
	fRingBytes     protowire.Number = 67
	// more of the call group (event.Call): an inject's or memread's target
	fTargetExe    protowire.Number = 68
	fTargetInTree protowire.Number = 69 // varint 0 or 1, written whenever TargetInTree is set
	// more of the process group: an exec's agent location variables
	fEnv protowire.Number = 70 // repeated string NAME=value
	// event.Attr (chown, xattr); fAttr is written whenever the event has
	// one, so its presence marks the group
	fAttr       protowire.Number = 71 // varint 1
	fOwner      protowire.Number = 72 // varint, written whenever Owner is set
	fOwnerGroup protowire.Number = 73 // varint, written whenever OwnerGroup is set
	fXattrName  protowire.Number = 74
	fXattrOp    protowire.Number = 75
	// event.Key (key); fKey is written whenever the event has one, so its
	// presence marks the group
	fKey       protowire.Number = 76 // varint 1
	fKeyOp     protowire.Number = 77
	fKeySerial protowire.Number = 78 // sint, written when not 0
	fKeyRing   protowire.Number = 79 // sint, written when not 0
	fKeyType   protowire.Number = 80
	fKeyDesc   protowire.Number = 81
	fKeyBytes  protowire.Number = 82
	// event.Mount; fMountOp is written whenever the event has one, so its
	// presence marks the group
	fMountOp     protowire.Number = 83
	fFSType      protowire.Number = 84
	fMountData   protowire.Number = 85
	fMountLayers protowire.Number = 86 // repeated string
	fMountFD     protowire.Number = 87 // zigzag varint, written whenever MountFD is set
	// more of the object group (event.Object)
	fRepeats protowire.Number = 88
)

// lastField is the highest field number this reader knows.
const lastField = fRepeats

// kindByCode is kindCodes inverted.
var kindByCode = func() []event.Kind {
	var max uint64
	for _, c := range kindCodes {
		max = maxOf(max, c)
	}
	out := make([]event.Kind, max+1)
	for k, c := range kindCodes {
		out[c] = k
	}
	return out
}()

func maxOf(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// maxInternLen is the longest string the writer puts in the strings
// table; longer ones (a long argv element, say) are written inline, since
// they rarely repeat and would pin their bytes in the writer's cache.
const maxInternLen = 256

// stringIDs gives the strings-table id of a string, assigning one when
// it is new.
type stringIDs interface{ id(s string) int64 }

// appendEvent appends ev, as one length-delimited message, to buf.
// firstTS is the chunk's first_ts. It is long because it writes every
// field in one place, in field-table order, with the closures the hot
// path needs inlined: split up, the table would be spread over several.
func appendEvent(buf []byte, ev *event.Event, firstTS int64, ids stringIDs) []byte {
	// The message is built after a 2-byte hole for its length, which is
	// enough for any message under 16 KiB; a longer one is moved up.
	start := len(buf)
	buf = append(buf, 0, 0)
	body := len(buf)

	uint := func(n protowire.Number, v uint64) {
		if v != 0 {
			buf = protowire.AppendVarint(protowire.AppendTag(buf, n, protowire.VarintType), v)
		}
	}
	sint := func(n protowire.Number, v int64) {
		buf = protowire.AppendVarint(protowire.AppendTag(buf, n, protowire.VarintType), protowire.EncodeZigZag(v))
	}
	str1 := func(n protowire.Number, s string) { // s may be empty (a list element)
		if len(s) <= maxInternLen {
			buf = protowire.AppendVarint(protowire.AppendTag(buf, n, protowire.VarintType), uint64(ids.id(s)))
			return
		}
		buf = protowire.AppendString(protowire.AppendTag(buf, n, protowire.BytesType), s)
	}
	str := func(n protowire.Number, s string) {
		if s != "" {
			str1(n, s)
		}
	}
	flag := func(n protowire.Number, v bool) {
		if v {
			uint(n, 1)
		}
	}

	if c, ok := kindCodes[ev.Kind]; ok {
		uint(fKind, c)
	} else {
		str(fKindName, string(ev.Kind))
	}
	if ts := tsOf(ev.TS); ts != firstTS {
		sint(fTS, ts-firstTS)
	}
	uint(fPID, uint64(ev.PID))
	uint(fTID, uint64(ev.TID))
	uint(fPPID, uint64(ev.PPID))
	str(fComm, ev.Comm)
	str(fExecID, ev.ExecID)
	str(fParentExecID, ev.ParentExecID)
	str(fPath, ev.Path)
	str(fPath2, ev.Path2)
	flag(fPathTruncated, ev.PathTruncated)
	if p := ev.Process; p != nil {
		for _, a := range p.Argv {
			str1(fArgv, a)
		}
		flag(fArgvTruncated, p.ArgvTruncated)
		str(fCwd, p.Cwd)
		str(fScript, p.Script)
		str(fHome, p.Home)
		for _, v := range p.Env {
			str1(fEnv, v)
		}
		if p.UID != nil {
			buf = protowire.AppendVarint(protowire.AppendTag(buf, fUID, protowire.VarintType), uint64(*p.UID))
		}
		str(fSHA256, p.SHA256)
		str(fScriptSHA256, p.ScriptSHA256)
		uint(fChildPID, uint64(p.ChildPID))
		str(fChildExecID, p.ChildExecID)
		if p.ExitCode != nil {
			sint(fExitCode, int64(*p.ExitCode))
		}
		if p.Signal != 0 {
			sint(fSignal, int64(p.Signal))
		}
		uint(fDurationNS, p.DurationNS)
		uint(fCPUNS, p.CPUNS)
		uint(fMaxRSSKB, p.MaxRSSKB)
		uint(fReadBytes, p.ReadBytes)
		uint(fWriteBytes, p.WriteBytes)
		flag(fDeleted, p.Deleted)
	}
	if ev.Flags != nil {
		buf = protowire.AppendVarint(protowire.AppendTag(buf, fFlags, protowire.VarintType), uint64(*ev.Flags))
	}
	if ev.Mode != nil {
		buf = protowire.AppendVarint(protowire.AppendTag(buf, fMode, protowire.VarintType), uint64(*ev.Mode))
	}
	str(fAccess, ev.Access)
	if ev.Result != nil {
		sint(fResult, *ev.Result)
	}
	if o := ev.Object; o != nil {
		uint(fDev, o.Dev)
		buf = protowire.AppendVarint(protowire.AppendTag(buf, fIno, protowire.VarintType), o.Ino)
		str(fFileType, o.FileType)
		uint(fNlink, uint64(o.Nlink))
		str(fPathRequested, o.PathRequested)
		str(fPathDiffers, o.PathDiffers)
		uint(fRepeats, o.Repeats)
	}
	if n := ev.Network; n != nil {
		str(fFamily, n.Family)
		str(fProto, n.Proto)
		str(fAddr, n.Addr)
		uint(fPort, uint64(n.Port))
		str(fHost, n.Host)
		str(fQName, n.QName)
		str(fQType, n.QType)
		for _, a := range n.Answers {
			str1(fAnswers, a)
		}
		uint(fBytesSent, n.BytesSent)
		uint(fBytesRecv, n.BytesRecv)
		flag(fAddrUser, n.AddrUser)
		flag(fFastOpen, n.FastOpen)
		uint(fPeerPID, uint64(n.PeerPID))
		str(fPeerExe, n.PeerExe)
		if n.PeerInTree != nil {
			buf = protowire.AppendVarint(protowire.AppendTag(buf, fPeerInTree, protowire.VarintType), b2u(*n.PeerInTree))
		}
	}
	if c := ev.Call; c != nil {
		uint(fTargetPID, uint64(c.TargetPID))
		str(fTargetExecID, c.TargetExecID)
		str(fMethod, c.Method)
		flag(fAdopted, c.Adopted)
		if c.Signo != 0 {
			sint(fSigno, int64(c.Signo))
		}
		str(fBPFCmd, c.BPFCmd)
		flag(fTargetNSLocal, c.TargetNSLocal)
		str(fTargetExe, c.TargetExe)
		if c.TargetInTree != nil {
			buf = protowire.AppendVarint(protowire.AppendTag(buf, fTargetInTree, protowire.VarintType), b2u(*c.TargetInTree))
		}
	}
	if a := ev.Attr; a != nil {
		buf = protowire.AppendVarint(protowire.AppendTag(buf, fAttr, protowire.VarintType), 1)
		if a.Owner != nil {
			buf = protowire.AppendVarint(protowire.AppendTag(buf, fOwner, protowire.VarintType), uint64(*a.Owner))
		}
		if a.OwnerGroup != nil {
			buf = protowire.AppendVarint(protowire.AppendTag(buf, fOwnerGroup, protowire.VarintType), uint64(*a.OwnerGroup))
		}
		str(fXattrName, a.XattrName)
		str(fXattrOp, a.XattrOp)
	}
	if k := ev.Key; k != nil {
		buf = protowire.AppendVarint(protowire.AppendTag(buf, fKey, protowire.VarintType), 1)
		str(fKeyOp, k.KeyOp)
		if k.KeySerial != 0 {
			sint(fKeySerial, int64(k.KeySerial))
		}
		if k.KeyRing != 0 {
			sint(fKeyRing, int64(k.KeyRing))
		}
		str(fKeyType, k.KeyType)
		str(fKeyDesc, k.KeyDesc)
		uint(fKeyBytes, uint64(k.KeyBytes))
	}
	if m := ev.Mount; m != nil {
		str1(fMountOp, m.MountOp)
		str(fFSType, m.FSType)
		str(fMountData, m.MountData)
		for _, l := range m.MountLayers {
			str1(fMountLayers, l)
		}
		if m.MountFD != nil {
			sint(fMountFD, int64(*m.MountFD))
		}
	}
	if r := ev.Ring; r != nil {
		str1(fVia, r.Via)
		str(fRingOp, r.RingOp)
		flag(fResultUnknown, r.ResultUnknown)
		uint(fRingOps, r.RingOps)
		uint(fRingBytes, r.RingBytes)
	}

	n := len(buf) - body
	if n < 1<<14 {
		buf[start] = byte(n) | 0x80
		buf[start+1] = byte(n >> 7)
		return buf
	}
	// Longer than a 2-byte varint holds (a 64 KiB argv): make room.
	var lenBuf [binaryMaxVarint]byte
	l := protowire.AppendVarint(lenBuf[:0], uint64(n))
	buf = append(buf, l[2:]...) // grow by the extra length bytes
	copy(buf[start+len(l):], buf[body:body+n])
	copy(buf[start:], l)
	return buf
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// binaryMaxVarint is the longest varint.
const binaryMaxVarint = 10

// chunkDecoder turns chunks back into events. It shares the strings of
// the strings table among every event it makes, allocates events and
// their groups in slabs, and shares the pointer fields' values (shared).
type chunkDecoder struct {
	strs  *pathTable
	in    *interner
	u32   shared[uint32]
	i64   shared[int64]
	ints  shared[int]
	objs  event.Slab[event.Object]
	rings event.Slab[event.Ring]
}

// shared hands out pointers to the values of the events' pointer fields,
// one pointer per value among those seen lately: a session's flags, modes
// and results repeat (O_RDONLY|O_CLOEXEC, fd 3, -ENOENT), so most events
// share a few values instead of carrying one each (12 MiB of a
// million-event session). Nothing writes through an event's pointer
// fields: they only tell a meaningful zero from none.
type shared[T uint32 | int64 | int] struct {
	slab   event.Slab[T]
	recent [64]*T // by a hash of the value
}

// ptr returns a pointer to v.
func (s *shared[T]) ptr(v T) *T {
	i := uint64(v) * 0x9e3779b97f4a7c15 >> 58
	if p := s.recent[i]; p != nil && *p == v {
		return p
	}
	p := s.slab.Ptr(v)
	s.recent[i] = p
	return p
}

// errChunk is wrapped by a chunk decoding error.
var errChunk = errors.New("bad event record")

// decode calls fn for each of the count events of the chunk data, whose
// first event has seq firstSeq.
func (d *chunkDecoder) decode(data []byte, firstSeq uint64, count int, firstTS int64, fn func(*event.Event) error) error {
	seq := firstSeq
	for len(data) > 0 {
		msg, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return fmt.Errorf("%w: event %d: %v", errChunk, seq, protowire.ParseError(n))
		}
		data = data[n:]
		ev := d.in.event()
		ev.Seq = seq
		if err := d.event(msg, ev, firstTS); err != nil {
			return fmt.Errorf("%w: event %d: %v", errChunk, seq, err)
		}
		if err := fn(ev); err != nil {
			return err
		}
		seq++
	}
	if got := int(seq - firstSeq); got != count {
		return fmt.Errorf("%w: chunk at event %d holds %d events, its row says %d", errChunk, firstSeq, got, count)
	}
	return nil
}

// event decodes one event message into ev. Like appendEvent it is one
// switch over the whole field table, which is why it is long.
func (d *chunkDecoder) event(b []byte, ev *event.Event, firstTS int64) error {
	ts := firstTS
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v uint64
		var raw []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			raw, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if num > lastField || typ != protowire.VarintType && typ != protowire.BytesType {
			continue // a field of a newer writer
		}
		if (fArgv <= num && num <= fWriteBytes && num != fPathTruncated || num == fDeleted || num == fHome || num == fScriptSHA256 || num == fEnv) && ev.Process == nil {
			ev.Process = d.in.process()
		} else if (fFamily <= num && num <= fBytesRecv || fAddrUser <= num && num <= fPeerInTree) && ev.Network == nil {
			ev.Network = d.in.network()
		} else if (fDev <= num && num <= fPathDiffers || num == fRepeats) && ev.Object == nil {
			ev.Object = d.objs.New()
		} else if (fTargetPID <= num && num <= fTargetNSLocal || fTargetExe <= num && num <= fTargetInTree) && ev.Call == nil {
			ev.Call = &event.Call{}
		} else if fVia <= num && num <= fRingBytes && ev.Ring == nil {
			ev.Ring = d.rings.New()
		} else if fAttr <= num && num <= fXattrOp && ev.Attr == nil {
			ev.Attr = &event.Attr{}
		} else if fKey <= num && num <= fKeyBytes && ev.Key == nil {
			ev.Key = &event.Key{}
		} else if fMountOp <= num && num <= fMountFD && ev.Mount == nil {
			ev.Mount = &event.Mount{}
		}
		if stringFields[num] {
			s, err := d.string(typ, v, raw)
			if err != nil {
				return fmt.Errorf("field %d: %w", num, err)
			}
			d.setString(ev, num, s)
			continue
		}
		if typ != protowire.VarintType {
			return fmt.Errorf("field %d: bytes where a number belongs", num)
		}
		switch num {
		case fKind:
			if v < uint64(len(kindByCode)) && kindByCode[v] != "" {
				ev.Kind = kindByCode[v]
			} else {
				ev.Kind = event.Kind(fmt.Sprintf("kind-%d", v)) // a newer writer's kind
			}
		case fTS:
			ts = firstTS + protowire.DecodeZigZag(v)
		case fPID:
			ev.PID = uint32(v)
		case fTID:
			ev.TID = uint32(v)
		case fPPID:
			ev.PPID = uint32(v)
		case fArgvTruncated:
			ev.Process.ArgvTruncated = v != 0
		case fPathTruncated:
			ev.PathTruncated = v != 0
		case fUID:
			ev.Process.UID = d.u32.ptr(uint32(v))
		case fChildPID:
			ev.Process.ChildPID = uint32(v)
		case fExitCode:
			ev.Process.ExitCode = d.ints.ptr(int(protowire.DecodeZigZag(v)))
		case fSignal:
			ev.Process.Signal = int(protowire.DecodeZigZag(v))
		case fDurationNS:
			ev.Process.DurationNS = v
		case fCPUNS:
			ev.Process.CPUNS = v
		case fMaxRSSKB:
			ev.Process.MaxRSSKB = v
		case fReadBytes:
			ev.Process.ReadBytes = v
		case fWriteBytes:
			ev.Process.WriteBytes = v
		case fFlags:
			ev.Flags = d.u32.ptr(uint32(v))
		case fMode:
			ev.Mode = d.u32.ptr(uint32(v))
		case fResult:
			ev.Result = d.i64.ptr(protowire.DecodeZigZag(v))
		case fPort:
			ev.Network.Port = uint16(v)
		case fBytesSent:
			ev.Network.BytesSent = v
		case fBytesRecv:
			ev.Network.BytesRecv = v
		case fDev:
			ev.Object.Dev = v
		case fIno:
			ev.Object.Ino = v
		case fNlink:
			ev.Object.Nlink = uint32(v)
		case fRepeats:
			ev.Object.Repeats = v
		case fDeleted:
			ev.Process.Deleted = v != 0
		case fAddrUser:
			ev.Network.AddrUser = v != 0
		case fFastOpen:
			ev.Network.FastOpen = v != 0
		case fPeerPID:
			ev.Network.PeerPID = uint32(v)
		case fPeerInTree:
			in := v != 0
			ev.Network.PeerInTree = &in
		case fTargetPID:
			ev.Call.TargetPID = uint32(v)
		case fAdopted:
			ev.Call.Adopted = v != 0
		case fTargetNSLocal:
			ev.Call.TargetNSLocal = v != 0
		case fTargetInTree:
			in := v != 0
			ev.Call.TargetInTree = &in
		case fSigno:
			ev.Call.Signo = int(protowire.DecodeZigZag(v))
		case fResultUnknown:
			ev.Ring.ResultUnknown = v != 0
		case fRingOps:
			ev.Ring.RingOps = v
		case fRingBytes:
			ev.Ring.RingBytes = v
		case fOwner:
			ev.Attr.Owner = d.u32.ptr(uint32(v))
		case fOwnerGroup:
			ev.Attr.OwnerGroup = d.u32.ptr(uint32(v))
		case fKeySerial:
			ev.Key.KeySerial = int32(protowire.DecodeZigZag(v))
		case fKeyRing:
			ev.Key.KeyRing = int32(protowire.DecodeZigZag(v))
		case fKeyBytes:
			ev.Key.KeyBytes = uint32(v)
		case fMountFD:
			ev.Mount.MountFD = event.Ptr(int32(protowire.DecodeZigZag(v)))
		}
	}
	ev.TS = timeOf(ts)
	ev.Complete()
	return nil
}

// string is a string field's value: an id of the strings table (a
// varint) or the bytes inline.
func (d *chunkDecoder) string(typ protowire.Type, v uint64, raw []byte) (string, error) {
	if typ == protowire.BytesType {
		return d.in.bytes(raw), nil
	}
	if v > math.MaxInt64 {
		return "", fmt.Errorf("string id %d", v)
	}
	s, ok := d.strs.lookup(int64(v))
	if !ok {
		return "", fmt.Errorf("no string %d", v)
	}
	return s, nil
}

// setString sets string field num of ev to s (appends, for a list).
func (d *chunkDecoder) setString(ev *event.Event, num protowire.Number, s string) {
	switch num {
	case fKindName:
		ev.Kind = event.Kind(s)
	case fComm:
		ev.Comm = s
	case fExecID:
		ev.ExecID = s
	case fParentExecID:
		ev.ParentExecID = s
	case fPath:
		ev.Path = s
	case fPath2:
		ev.Path2 = s
	case fArgv:
		ev.Process.Argv = append(ev.Argv(), s)
	case fCwd:
		ev.Process.Cwd = s
	case fScript:
		ev.Process.Script = s
	case fHome:
		ev.Process.Home = s
	case fEnv:
		ev.Process.Env = append(ev.Process.Env, s)
	case fSHA256:
		ev.Process.SHA256 = s
	case fScriptSHA256:
		ev.Process.ScriptSHA256 = s
	case fChildExecID:
		ev.Process.ChildExecID = s
	case fAccess:
		ev.Access = s
	case fFamily:
		ev.Network.Family = s
	case fProto:
		ev.Network.Proto = s
	case fAddr:
		ev.Network.Addr = s
	case fHost:
		ev.Network.Host = s
	case fQName:
		ev.Network.QName = s
	case fQType:
		ev.Network.QType = s
	case fAnswers:
		ev.Network.Answers = append(ev.Answers(), s)
	case fFileType:
		ev.Object.FileType = s
	case fPathRequested:
		ev.Object.PathRequested = s
	case fPathDiffers:
		ev.Object.PathDiffers = s
	case fPeerExe:
		ev.Network.PeerExe = s
	case fTargetExecID:
		ev.Call.TargetExecID = s
	case fMethod:
		ev.Call.Method = s
	case fBPFCmd:
		ev.Call.BPFCmd = s
	case fTargetExe:
		ev.Call.TargetExe = s
	case fXattrName:
		ev.Attr.XattrName = s
	case fXattrOp:
		ev.Attr.XattrOp = s
	case fKeyOp:
		ev.Key.KeyOp = s
	case fKeyType:
		ev.Key.KeyType = s
	case fKeyDesc:
		ev.Key.KeyDesc = s
	case fMountOp:
		ev.Mount.MountOp = s
	case fFSType:
		ev.Mount.FSType = s
	case fMountData:
		ev.Mount.MountData = s
	case fMountLayers:
		ev.Mount.MountLayers = append(ev.Mount.MountLayers, s)
	case fVia:
		ev.Ring.Via = s
	case fRingOp:
		ev.Ring.RingOp = s
	}
}

// stringFields marks the fields that hold strings.
var stringFields = func() [lastField + 1]bool {
	var m [lastField + 1]bool
	for _, f := range []protowire.Number{fKindName, fComm, fExecID, fParentExecID, fPath, fPath2, fArgv, fCwd, fScript, fHome,
		fSHA256, fScriptSHA256, fChildExecID, fAccess, fFamily, fProto, fAddr, fHost, fQName, fQType, fAnswers,
		fFileType, fPathRequested, fPathDiffers, fPeerExe, fTargetExecID, fMethod, fBPFCmd, fVia, fRingOp, fXattrName, fXattrOp, fKeyOp, fKeyType, fKeyDesc,
		fMountOp, fFSType, fMountData, fMountLayers,
		fTargetExe, fEnv} {
		m[f] = true
	}
	return m
}()
