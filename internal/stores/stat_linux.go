package stores

import (
	"io/fs"
	"syscall"
	"time"
)

// OwnerAndChange returns a file's owner and its inode change time (ctime),
// which the kernel sets at every write, rename or chmod and which, unlike
// the modification time, its owner cannot set back or forward.
func OwnerAndChange(st fs.FileInfo) (uid int, ctime time.Time, ok bool) {
	sys, isStat := st.Sys().(*syscall.Stat_t)
	if !isStat {
		return 0, st.ModTime(), false
	}
	return int(sys.Uid), time.Unix(sys.Ctim.Sec, sys.Ctim.Nsec), true
}
