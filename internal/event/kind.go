package event

import "strings"

// IsFile reports whether k names a file-system event: one whose Path (and
// Path2 for rename and link) the sensor resolved against the process's
// working directory or a descriptor.
func (k Kind) IsFile() bool {
	switch k {
	case KindOpen, KindRename, KindUnlink, KindMkdir, KindChmod, KindLink:
		return true
	}
	return false
}

// IsNetwork reports whether k names a network event: one that carries a
// Network.
func (k Kind) IsNetwork() bool {
	switch k {
	case KindConnect, KindBind, KindAccept, KindDNS, KindNet, KindSend:
		return true
	}
	return false
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
