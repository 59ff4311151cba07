package untrusted

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// ChangeableBy says how the user uid could change what path holds: write
// it, or replace it (or a directory above it) with a file of their own.
// "" when they cannot. A file the traced tree could change is not one a
// sudo run may trust, whatever it held when it was read. Symbolic links
// are followed: the file read is the one judged, and each link on the way
// too.
func ChangeableBy(path string, uid int) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	gids := map[int]bool{}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if ids, err := u.GroupIds(); err == nil {
			for _, g := range ids {
				if n, err := strconv.Atoi(g); err == nil {
					gids[n] = true
				}
			}
		}
	}
	name := userName(uid)
	chains := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		chains = append(chains, real)
	}
	for _, p := range chains {
		if why := changeable(p, uid, gids, name); why != "" {
			return why, nil
		}
	}
	return "", nil
}

// changeable walks p from the file up to the root.
func changeable(p string, uid int, gids map[int]bool, name string) string {
	var below *syscall.Stat_t // the entry in the directory looked at next
	for d := p; ; d = filepath.Dir(d) {
		st, err := os.Lstat(d)
		if err != nil {
			return ""
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return ""
		}
		switch {
		case int(sys.Uid) == uid:
			return fmt.Sprintf("%s is %s's", d, name)
		case below == nil && writable(st.Mode(), sys, gids):
			return fmt.Sprintf("%s can write %s", name, d)
		case below != nil && st.IsDir() && writable(st.Mode(), sys, gids) &&
			(st.Mode()&fs.ModeSticky == 0 || int(below.Uid) == uid):
			return fmt.Sprintf("%s can replace what %s holds", name, d)
		}
		below = sys
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// writable says whether the mode lets a group of gids or everyone write.
func writable(m fs.FileMode, sys *syscall.Stat_t, gids map[int]bool) bool {
	return m.Perm()&0o002 != 0 || m.Perm()&0o020 != 0 && gids[int(sys.Gid)]
}

// userName is uid's login name, or its number.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}
