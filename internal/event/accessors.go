package event

// Accessors of the field groups. Event embeds its groups (Process,
// Object, Network, Call, Ring, Attr, Key) by pointer, and an event of a kind without
// a group has none: reading one of its fields through these methods gives
// the zero value instead of a nil-pointer panic. Each method shadows the
// promoted field of its name, so e.Argv cannot be read by mistake without
// the check. Writes name the group: e.Process.Argv = ..., e.Network.Port
// = ... TestAccessors keeps this file in step with the groups.

// Argv is Process.Argv, or its zero value when e has no Process.
func (e *Event) Argv() []string {
	if e.Process == nil {
		var zero []string
		return zero
	}
	return e.Process.Argv
}

// ArgvTruncated is Process.ArgvTruncated, or its zero value when e has no Process.
func (e *Event) ArgvTruncated() bool {
	if e.Process == nil {
		var zero bool
		return zero
	}
	return e.Process.ArgvTruncated
}

// Cwd is Process.Cwd, or its zero value when e has no Process.
func (e *Event) Cwd() string {
	if e.Process == nil {
		var zero string
		return zero
	}
	return e.Process.Cwd
}

// Script is Process.Script, or its zero value when e has no Process.
func (e *Event) Script() string {
	if e.Process == nil {
		var zero string
		return zero
	}
	return e.Process.Script
}

// Home is Process.Home, or its zero value when e has no Process.
func (e *Event) Home() string {
	if e.Process == nil {
		var zero string
		return zero
	}
	return e.Process.Home
}

// UID is Process.UID, or its zero value when e has no Process.
func (e *Event) UID() *uint32 {
	if e.Process == nil {
		var zero *uint32
		return zero
	}
	return e.Process.UID
}

// SHA256 is Process.SHA256, or its zero value when e has no Process.
func (e *Event) SHA256() string {
	if e.Process == nil {
		var zero string
		return zero
	}
	return e.Process.SHA256
}

// ScriptSHA256 is Process.ScriptSHA256, or its zero value when e has no Process.
func (e *Event) ScriptSHA256() string {
	if e.Process == nil {
		var zero string
		return zero
	}
	return e.Process.ScriptSHA256
}

// Deleted is Process.Deleted, or its zero value when e has no Process.
func (e *Event) Deleted() bool {
	if e.Process == nil {
		var zero bool
		return zero
	}
	return e.Process.Deleted
}

// ChildPID is Process.ChildPID, or its zero value when e has no Process.
func (e *Event) ChildPID() uint32 {
	if e.Process == nil {
		var zero uint32
		return zero
	}
	return e.Process.ChildPID
}

// ChildExecID is Process.ChildExecID, or its zero value when e has no Process.
func (e *Event) ChildExecID() string {
	if e.Process == nil {
		var zero string
		return zero
	}
	return e.Process.ChildExecID
}

// ExitCode is Process.ExitCode, or its zero value when e has no Process.
func (e *Event) ExitCode() *int {
	if e.Process == nil {
		var zero *int
		return zero
	}
	return e.Process.ExitCode
}

// Signal is Process.Signal, or its zero value when e has no Process.
func (e *Event) Signal() int {
	if e.Process == nil {
		var zero int
		return zero
	}
	return e.Process.Signal
}

// DurationNS is Process.DurationNS, or its zero value when e has no Process.
func (e *Event) DurationNS() uint64 {
	if e.Process == nil {
		var zero uint64
		return zero
	}
	return e.Process.DurationNS
}

// CPUNS is Process.CPUNS, or its zero value when e has no Process.
func (e *Event) CPUNS() uint64 {
	if e.Process == nil {
		var zero uint64
		return zero
	}
	return e.Process.CPUNS
}

// MaxRSSKB is Process.MaxRSSKB, or its zero value when e has no Process.
func (e *Event) MaxRSSKB() uint64 {
	if e.Process == nil {
		var zero uint64
		return zero
	}
	return e.Process.MaxRSSKB
}

// ReadBytes is Process.ReadBytes, or its zero value when e has no Process.
func (e *Event) ReadBytes() uint64 {
	if e.Process == nil {
		var zero uint64
		return zero
	}
	return e.Process.ReadBytes
}

// WriteBytes is Process.WriteBytes, or its zero value when e has no Process.
func (e *Event) WriteBytes() uint64 {
	if e.Process == nil {
		var zero uint64
		return zero
	}
	return e.Process.WriteBytes
}

// Dev is Object.Dev, or its zero value when e has no Object.
func (e *Event) Dev() uint64 {
	if e.Object == nil {
		var zero uint64
		return zero
	}
	return e.Object.Dev
}

// Ino is Object.Ino, or its zero value when e has no Object.
func (e *Event) Ino() uint64 {
	if e.Object == nil {
		var zero uint64
		return zero
	}
	return e.Object.Ino
}

// Repeats is Object.Repeats, or its zero value when e has no Object.
func (e *Event) Repeats() uint64 {
	if e.Object == nil {
		var zero uint64
		return zero
	}
	return e.Object.Repeats
}

// FileType is Object.FileType, or its zero value when e has no Object.
func (e *Event) FileType() string {
	if e.Object == nil {
		var zero string
		return zero
	}
	return e.Object.FileType
}

// Nlink is Object.Nlink, or its zero value when e has no Object.
func (e *Event) Nlink() uint32 {
	if e.Object == nil {
		var zero uint32
		return zero
	}
	return e.Object.Nlink
}

// PathRequested is Object.PathRequested, or its zero value when e has no Object.
func (e *Event) PathRequested() string {
	if e.Object == nil {
		var zero string
		return zero
	}
	return e.Object.PathRequested
}

// PathDiffers is Object.PathDiffers, or its zero value when e has no Object.
func (e *Event) PathDiffers() string {
	if e.Object == nil {
		var zero string
		return zero
	}
	return e.Object.PathDiffers
}

// Family is Network.Family, or its zero value when e has no Network.
func (e *Event) Family() string {
	if e.Network == nil {
		var zero string
		return zero
	}
	return e.Network.Family
}

// Proto is Network.Proto, or its zero value when e has no Network.
func (e *Event) Proto() string {
	if e.Network == nil {
		var zero string
		return zero
	}
	return e.Network.Proto
}

// Addr is Network.Addr, or its zero value when e has no Network.
func (e *Event) Addr() string {
	if e.Network == nil {
		var zero string
		return zero
	}
	return e.Network.Addr
}

// Port is Network.Port, or its zero value when e has no Network.
func (e *Event) Port() uint16 {
	if e.Network == nil {
		var zero uint16
		return zero
	}
	return e.Network.Port
}

// Host is Network.Host, or its zero value when e has no Network.
func (e *Event) Host() string {
	if e.Network == nil {
		var zero string
		return zero
	}
	return e.Network.Host
}

// QName is Network.QName, or its zero value when e has no Network.
func (e *Event) QName() string {
	if e.Network == nil {
		var zero string
		return zero
	}
	return e.Network.QName
}

// QType is Network.QType, or its zero value when e has no Network.
func (e *Event) QType() string {
	if e.Network == nil {
		var zero string
		return zero
	}
	return e.Network.QType
}

// Answers is Network.Answers, or its zero value when e has no Network.
func (e *Event) Answers() []string {
	if e.Network == nil {
		var zero []string
		return zero
	}
	return e.Network.Answers
}

// BytesSent is Network.BytesSent, or its zero value when e has no Network.
func (e *Event) BytesSent() uint64 {
	if e.Network == nil {
		var zero uint64
		return zero
	}
	return e.Network.BytesSent
}

// BytesRecv is Network.BytesRecv, or its zero value when e has no Network.
func (e *Event) BytesRecv() uint64 {
	if e.Network == nil {
		var zero uint64
		return zero
	}
	return e.Network.BytesRecv
}

// AddrUser is Network.AddrUser, or its zero value when e has no Network.
func (e *Event) AddrUser() bool {
	if e.Network == nil {
		var zero bool
		return zero
	}
	return e.Network.AddrUser
}

// FastOpen is Network.FastOpen, or its zero value when e has no Network.
func (e *Event) FastOpen() bool {
	if e.Network == nil {
		var zero bool
		return zero
	}
	return e.Network.FastOpen
}

// PeerPID is Network.PeerPID, or its zero value when e has no Network.
func (e *Event) PeerPID() uint32 {
	if e.Network == nil {
		var zero uint32
		return zero
	}
	return e.Network.PeerPID
}

// PeerExe is Network.PeerExe, or its zero value when e has no Network.
func (e *Event) PeerExe() string {
	if e.Network == nil {
		var zero string
		return zero
	}
	return e.Network.PeerExe
}

// PeerInTree is Network.PeerInTree, or its zero value when e has no Network.
func (e *Event) PeerInTree() *bool {
	if e.Network == nil {
		var zero *bool
		return zero
	}
	return e.Network.PeerInTree
}

// TargetPID is Call.TargetPID, or its zero value when e has no Call.
func (e *Event) TargetPID() uint32 {
	if e.Call == nil {
		var zero uint32
		return zero
	}
	return e.Call.TargetPID
}

// TargetExecID is Call.TargetExecID, or its zero value when e has no Call.
func (e *Event) TargetExecID() string {
	if e.Call == nil {
		var zero string
		return zero
	}
	return e.Call.TargetExecID
}

// Method is Call.Method, or its zero value when e has no Call.
func (e *Event) Method() string {
	if e.Call == nil {
		var zero string
		return zero
	}
	return e.Call.Method
}

// Adopted is Call.Adopted, or its zero value when e has no Call.
func (e *Event) Adopted() bool {
	if e.Call == nil {
		var zero bool
		return zero
	}
	return e.Call.Adopted
}

// TargetExe is Call.TargetExe, or its zero value when e has no Call.
func (e *Event) TargetExe() string {
	if e.Call == nil {
		var zero string
		return zero
	}
	return e.Call.TargetExe
}

// TargetInTree is Call.TargetInTree, or its zero value when e has no Call.
func (e *Event) TargetInTree() *bool {
	if e.Call == nil {
		var zero *bool
		return zero
	}
	return e.Call.TargetInTree
}

// TargetNSLocal is Call.TargetNSLocal, or its zero value when e has no Call.
func (e *Event) TargetNSLocal() bool {
	if e.Call == nil {
		var zero bool
		return zero
	}
	return e.Call.TargetNSLocal
}

// Signo is Call.Signo, or its zero value when e has no Call.
func (e *Event) Signo() int {
	if e.Call == nil {
		var zero int
		return zero
	}
	return e.Call.Signo
}

// BPFCmd is Call.BPFCmd, or its zero value when e has no Call.
func (e *Event) BPFCmd() string {
	if e.Call == nil {
		var zero string
		return zero
	}
	return e.Call.BPFCmd
}

// Via is Ring.Via, or its zero value when e has no Ring.
func (e *Event) Via() string {
	if e.Ring == nil {
		var zero string
		return zero
	}
	return e.Ring.Via
}

// RingOp is Ring.RingOp, or its zero value when e has no Ring.
func (e *Event) RingOp() string {
	if e.Ring == nil {
		var zero string
		return zero
	}
	return e.Ring.RingOp
}

// ResultUnknown is Ring.ResultUnknown, or its zero value when e has no Ring.
func (e *Event) ResultUnknown() bool {
	if e.Ring == nil {
		var zero bool
		return zero
	}
	return e.Ring.ResultUnknown
}

// RingOps is Ring.RingOps, or its zero value when e has no Ring.
func (e *Event) RingOps() uint64 {
	if e.Ring == nil {
		var zero uint64
		return zero
	}
	return e.Ring.RingOps
}

// RingBytes is Ring.RingBytes, or its zero value when e has no Ring.
func (e *Event) RingBytes() uint64 {
	if e.Ring == nil {
		var zero uint64
		return zero
	}
	return e.Ring.RingBytes
}

// Owner is Attr.Owner, or its zero value when e has no Attr.
func (e *Event) Owner() *uint32 {
	if e.Attr == nil {
		var zero *uint32
		return zero
	}
	return e.Attr.Owner
}

// OwnerGroup is Attr.OwnerGroup, or its zero value when e has no Attr.
func (e *Event) OwnerGroup() *uint32 {
	if e.Attr == nil {
		var zero *uint32
		return zero
	}
	return e.Attr.OwnerGroup
}

// XattrName is Attr.XattrName, or its zero value when e has no Attr.
func (e *Event) XattrName() string {
	if e.Attr == nil {
		var zero string
		return zero
	}
	return e.Attr.XattrName
}

// XattrOp is Attr.XattrOp, or its zero value when e has no Attr.
func (e *Event) XattrOp() string {
	if e.Attr == nil {
		var zero string
		return zero
	}
	return e.Attr.XattrOp
}

// MountOp is Mount.MountOp, or its zero value when e has no Mount.
func (e *Event) MountOp() string {
	if e.Mount == nil {
		var zero string
		return zero
	}
	return e.Mount.MountOp
}

// FSType is Mount.FSType, or its zero value when e has no Mount.
func (e *Event) FSType() string {
	if e.Mount == nil {
		var zero string
		return zero
	}
	return e.Mount.FSType
}

// MountData is Mount.MountData, or its zero value when e has no Mount.
func (e *Event) MountData() string {
	if e.Mount == nil {
		var zero string
		return zero
	}
	return e.Mount.MountData
}

// MountLayers is Mount.MountLayers, or its zero value when e has no Mount.
func (e *Event) MountLayers() []string {
	if e.Mount == nil {
		var zero []string
		return zero
	}
	return e.Mount.MountLayers
}

// MountFD is Mount.MountFD, or its zero value when e has no Mount.
func (e *Event) MountFD() *int32 {
	if e.Mount == nil {
		var zero *int32
		return zero
	}
	return e.Mount.MountFD
}

// Env is Process.Env, or its zero value when e has no Process.
func (e *Event) Env() []string {
	if e.Process == nil {
		var zero []string
		return zero
	}
	return e.Process.Env
}

// KeyOp is Key.KeyOp, or its zero value when e has no Key.
func (e *Event) KeyOp() string {
	if e.Key == nil {
		var zero string
		return zero
	}
	return e.Key.KeyOp
}

// KeySerial is Key.KeySerial, or its zero value when e has no Key.
func (e *Event) KeySerial() int32 {
	if e.Key == nil {
		var zero int32
		return zero
	}
	return e.Key.KeySerial
}

// KeyRing is Key.KeyRing, or its zero value when e has no Key.
func (e *Event) KeyRing() int32 {
	if e.Key == nil {
		var zero int32
		return zero
	}
	return e.Key.KeyRing
}

// KeyType is Key.KeyType, or its zero value when e has no Key.
func (e *Event) KeyType() string {
	if e.Key == nil {
		var zero string
		return zero
	}
	return e.Key.KeyType
}

// KeyDesc is Key.KeyDesc, or its zero value when e has no Key.
func (e *Event) KeyDesc() string {
	if e.Key == nil {
		var zero string
		return zero
	}
	return e.Key.KeyDesc
}

// KeyBytes is Key.KeyBytes, or its zero value when e has no Key.
func (e *Event) KeyBytes() uint32 {
	if e.Key == nil {
		var zero uint32
		return zero
	}
	return e.Key.KeyBytes
}
