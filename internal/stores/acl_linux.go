package stores

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// POSIX ACL xattr format (linux/posix_acl_xattr.h).
const (
	aclVersion   = 2
	aclUserObj   = 0x01
	aclUser      = 0x02
	aclGroupObj  = 0x04
	aclMask      = 0x10
	aclOther     = 0x20
	aclUndefined = 0xffffffff
)

// grantACL sets path's access ACL to: owner as the mode says, uid read
// (and search for a directory), group and others nothing. A directory
// also gets it as its default ACL, so the -wal and -shm files SQLite
// creates in it are readable by uid from their first moment.
func grantACL(path string, uid int, dir bool) error {
	read := uint16(4)
	if dir {
		read = 5
	}
	owner := uint16(6)
	if dir {
		owner = 7
	}
	entries := [][3]uint32{
		{aclUserObj, uint32(owner), aclUndefined},
		{aclUser, uint32(read), uint32(uid)},
		{aclGroupObj, 0, aclUndefined},
		{aclMask, uint32(read), aclUndefined},
		{aclOther, 0, aclUndefined},
	}
	buf := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		buf = binary.LittleEndian.AppendUint16(buf, uint16(e[0]))
		buf = binary.LittleEndian.AppendUint16(buf, uint16(e[1]))
		buf = binary.LittleEndian.AppendUint32(buf, e[2])
	}
	if err := unix.Setxattr(path, "system.posix_acl_access", buf, 0); err != nil {
		return err
	}
	if dir {
		return unix.Setxattr(path, "system.posix_acl_default", buf, 0)
	}
	return nil
}
