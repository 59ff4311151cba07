// What /proc says of descriptors: who listens on a TCP address, who
// holds a file open and how, and a process's cgroup.

package procfs

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Listener is the process that listens on a TCP address, as /proc shows it
// now: the session's egress denials name who would have answered a
// refused loopback connect (a dev server, a helper started before the
// session).
type Listener struct {
	PID int
	Exe string // /proc/PID/exe, "" when it could not be read
}

// ListenerOf finds the process listening on ap (or on the unspecified
// address at ap's port) in polygraph's own network namespace:
// /proc/net/tcp and tcp6 give the listening socket's inode, and the first
// process holding that socket (by /proc/PID/fd) is its listener. ok is
// false when no socket listens there or no process could be found (it
// is in another PID namespace, or exited).
func ListenerOf(ap netip.AddrPort) (Listener, bool) {
	inode := ""
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if inode = listeningInode(f, ap); inode != "" {
			break
		}
	}
	ino, err := strconv.ParseUint(inode, 10, 64)
	if err != nil {
		return Listener{}, false
	}
	holders := SocketHolders(ino)
	if len(holders) == 0 {
		return Listener{}, false
	}
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(holders[0]) + "/exe")
	return Listener{PID: holders[0], Exe: exe}, true
}

// eachFD calls fn with every process's pid and the paths of its
// descriptors (/proc/PID/fd/N) and N, until fn says it is done with that
// process.
func eachFD(fn func(pid int, path, fd string) (done bool)) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + e.Name() + "/fd/"
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if fn(pid, dir+fd.Name(), fd.Name()) {
				break
			}
		}
	}
}

// listeningInode returns the inode of the socket in table file (the
// format of /proc/net/tcp) that listens on ap or on its port at the
// unspecified address, "" for none.
func listeningInode(file string, ap netip.AddrPort) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" { // TCP_LISTEN
			continue
		}
		addr, ok := parseSockAddr(fs[1])
		if !ok || addr.Port() != ap.Port() {
			continue
		}
		if a := addr.Addr().Unmap(); a == ap.Addr().Unmap() || a.IsUnspecified() {
			return fs[9]
		}
	}
	return ""
}

// parseSockAddr parses a /proc/net/tcp address: the address's 32-bit
// words in hex, each in host byte order, a colon, the port in hex.
func parseSockAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	raw, err2 := hex.DecodeString(h)
	if err != nil || err2 != nil || len(raw) != 4 && len(raw) != 16 {
		return netip.AddrPort{}, false
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a, uint16(port)), true
}

// Holder is a process that holds a file open: how many of its
// descriptors of it read and how many write (O_RDWR counts in both).
type Holder struct {
	PID           int
	Reads, Writes int
}

// Holders returns the processes that hold the file (dev, ino) open (dev
// in stat's encoding), as /proc/PID/fd and fdinfo show them now.
func Holders(dev, ino uint64) []Holder {
	var out []Holder
	eachFD(func(pid int, path, fd string) bool {
		var st unix.Stat_t
		if unix.Stat(path, &st) != nil || st.Ino != ino || st.Dev != dev {
			return false
		}
		acc := fdAccess(pid, fd)
		if acc < 0 {
			return false // gone meanwhile, or unreadable: it holds nothing we can count
		}
		if len(out) == 0 || out[len(out)-1].PID != pid {
			out = append(out, Holder{PID: pid})
		}
		h := &out[len(out)-1]
		switch acc {
		case unix.O_RDONLY:
			h.Reads++
		case unix.O_WRONLY:
			h.Writes++
		case unix.O_RDWR:
			h.Reads++
			h.Writes++
		}
		return false
	})
	return out
}

// fdAccess is the access mode (O_ACCMODE) of process pid's descriptor
// fd, from the flags line of /proc/PID/fdinfo/FD (octal); -1 when it
// cannot be read.
func fdAccess(pid int, fd string) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + fd)
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				return -1
			}
			return int(n) & unix.O_ACCMODE
		}
	}
	return -1
}

// CgroupV2 returns the cgroup v2 path of process pid (the "0::" line of
// /proc/PID/cgroup, relative to the hierarchy's root).
func CgroupV2(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// SocketHolders returns the processes holding the socket whose inode is
// ino (a /proc/PID/fd link reading socket:[ino]), as /proc shows them now.
// It reads links only, and never follows one.
func SocketHolders(ino uint64) []int {
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	var out []int
	eachFD(func(pid int, path, _ string) bool {
		if l, err := os.Readlink(path); err == nil && l == want {
			out = append(out, pid)
			return true
		}
		return false
	})
	return out
}
