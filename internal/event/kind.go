package event

import "strings"

// Group is a set of field groups a kind carries (kinds.tsv).
type Group uint8

// The field groups: GroupProcess, GroupNetwork, GroupCall, GroupRing,
// GroupAttr, GroupKey and GroupMount are the Event's embedded structs of those names;
// GroupFile marks the file-system kinds, whose Path (and Path2 for rename
// and link) the sensor resolved against the process's working directory
// or a descriptor.
const (
	GroupProcess Group = 1 << iota
	GroupFile
	GroupNetwork
	GroupCall
	GroupRing
	GroupAttr
	GroupKey
	GroupMount
)

// Groups returns the field groups k carries.
func (k Kind) Groups() Group { return groups[k] }

// IsFile reports whether k names a file-system event: one whose Path (and
// Path2 for rename and link) the sensor resolved against the process's
// working directory or a descriptor.
func (k Kind) IsFile() bool { return groups[k]&GroupFile != 0 }

// IsNetwork reports whether k names a network event: one that carries a
// Network (io_uring operations and FIFO peers, which carry one too, are
// not network events).
func (k Kind) IsNetwork() bool {
	return groups[k]&GroupNetwork != 0 && groups[k]&GroupRing == 0 && k != KindPeer
}

// linuxEEXIST is EEXIST as the events carry it, whatever the platform
// reading them.
const linuxEEXIST = 17

// IsWrite reports, for a file event, whether it changes (or tries to
// change) the file system: every file kind but open does, an open does
// when it asks to write or create. A mkdir that found the directory there
// (mkdir -p walking down an existing path) changes nothing.
func (e *Event) IsWrite() bool {
	if e.Kind == KindMkdir && e.Result != nil && *e.Result == -linuxEEXIST {
		return false
	}
	if e.Kind != KindOpen {
		return true
	}
	return strings.Contains(e.Access, "write") || strings.Contains(e.Access, "create")
}
